// Admin: token login (sessionStorage), upload PDFs/zips, progress per job, index refresh. Papers
// are removed from their own page (views/paper.js), which shows the control to a signed-in admin.
import { api, serverInfo, ApiError, ADMIN_TOKEN_KEY as KEY } from '../api.js';
import { h, notice, empty, setTitle, dropZone, fileSize, loading } from '../ui.js';

const POLL_MS = 1000;
const LONG_JOB = 12;  // a job with more files shows its file table folded (the counts line says how they went)
const UNFINISHED = new Set(['pending', 'working']);
const IN_PROGRESS = new Set(['queued', 'running', 'indexing']);  // a job that is still working
// files a long job lists before the folded rest: they were not added for a failure or an unreadable text
const NEEDS_LOOK = new Set(['failed', 'no_text']);
const PAGE = 10;  // jobs per page of the list ("Show older jobs" asks for the next)
// a file's status as shown: the one being read says so; the others by name ('no_text' -> 'no text')
const statusWord = (status) => (status === 'working' ? 'reading' : status.replace('_', ' '));
const statusLabel = (status) => (status === 'working' ? 'reading…' : statusWord(status));
const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
// Figures and tables are found by their printed captions: a paper read without error may hold none
// ("ok", 0, 0 looked like a failure nobody named)
const foundNothing = (f) => f.status === 'ok' && !f.n_figures && !f.n_tables;

// "14:05 (3 min ago)": local time (with the date when not today) and how long ago.
const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
function whenText(iso, now = Date.now()) {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return '';
  const sameDay = t.toDateString() === new Date(now).toDateString();
  const local = t.toLocaleString(undefined, sameDay ? { hour: '2-digit', minute: '2-digit' }
    : { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
  const s = Math.round((t.getTime() - now) / 1000);
  const [v, unit] = Math.abs(s) < 60 ? [s, 'second'] : Math.abs(s) < 3600 ? [Math.round(s / 60), 'minute']
    : Math.abs(s) < 86400 ? [Math.round(s / 3600), 'hour'] : [Math.round(s / 86400), 'day'];
  return `${local} (${Math.abs(s) < 10 ? 'just now' : RELATIVE.format(v, unit)})`;
}

function duration(a, b) {
  const s = Math.max(0, Math.round((new Date(b) - new Date(a)) / 1000));
  return s < 90 ? `${s} s` : s < 5400 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`;
}

// The job's times as a line: when it was started, and when it finished (and how long it took).
function jobTimes(j) {
  if (!j.created_at) return null;
  const parts = [h('span', {}, 'started ', h('time', { datetime: j.created_at, title: new Date(j.created_at).toString() }, whenText(j.created_at)))];
  if (j.finished_at) {
    parts.push(h('span', {}, ' · finished ', h('time', { datetime: j.finished_at, title: new Date(j.finished_at).toString() }, whenText(j.finished_at)),
      ` · took ${duration(j.started_at || j.created_at, j.finished_at)}`));
  }
  return h('div', { class: 'muted small job-times' }, parts);
}

// Where the token comes from, in the mode this server runs in.
function tokenHelp(info) {
  if (info && info.admin_token_source === 'data_dir') {
    return h('div', { class: 'muted small', id: 'token-help' },
      h('p', {}, 'This server generated its token on first start (embedded mode without FIGSEARCH_ADMIN_TOKEN) and printed it in its log. On the server, this prints it again:'),
      h('pre', { class: 'cmd' }, 'figsearch admin-token --data-dir DATA_DIR'),
      h('p', {}, 'with the server\'s data dir. For ', h('code', {}, 'make demo'), ': ', h('code', {}, '.venv/bin/figsearch admin-token --data-dir data/demo'), '.'));
  }
  const mode = info && info.distributed ? 'distributed mode: every API process has the same one' : 'set when the server was started';
  return h('div', { class: 'muted small', id: 'token-help' },
    h('p', {}, `The token is the server's FIGSEARCH_ADMIN_TOKEN (${mode}); ask whoever runs the server.`));
}

export async function renderAdmin(root, ctx) {
  setTitle('Admin');
  const token = sessionStorage.getItem(KEY);
  if (!token) return renderLogin(root, ctx);
  try {
    await api('admin/jobs?limit=1', { token, signal: ctx.signal });
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
      sessionStorage.removeItem(KEY);
      return renderLogin(root, ctx, 'Your session token is no longer valid. Sign in again.');
    }
    throw err;
  }
  return renderDashboard(root, token, ctx);
}

function renderLogin(root, ctx, message) {
  root.replaceChildren();
  const input = h('input', { type: 'password', id: 'admin-token', autocomplete: 'current-password', required: true, placeholder: 'Admin token' });
  const msg = h('div', {}, message ? notice(message, 'warn') : null);
  const btn = h('button', { class: 'btn btn-primary', type: 'submit', id: 'login' }, 'Sign in');
  const help = h('div', {});
  const form = h('form', { class: 'panel', style: 'max-width:520px' },
    h('h1', {}, 'Admin sign-in'), help,
    h('label', { class: 'field', for: 'admin-token' }, 'Token'), input,
    h('p', { class: 'muted small' }, 'The token is kept in this tab only.'),
    h('div', { class: 'row', style: 'margin-top:12px' }, btn), msg);
  serverInfo().then((info) => help.replaceChildren(tokenHelp(info)), () => help.replaceChildren(tokenHelp(null)));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const t = input.value.trim();
    if (!t) return;
    btn.disabled = true;
    msg.replaceChildren(loading('Checking…'));
    try {
      await api('admin/jobs?limit=1', { token: t, signal: ctx.signal });
      sessionStorage.setItem(KEY, t);
      root.replaceChildren();
      await renderDashboard(root, t, ctx);
    } catch (err) {
      if (err.name === 'AbortError') return;
      msg.replaceChildren(notice(err.status === 403 ? 'Wrong token.' : err.message, 'error'));
      btn.disabled = false;
      input.select();
    }
  });
  root.append(form);
  input.focus();
}

async function renderDashboard(root, token, { signal }) {
  const info = await serverInfo();
  const timers = new Set();
  signal.addEventListener('abort', () => { timers.forEach(clearTimeout); timers.clear(); });
  let chosen = [];

  // ---- upload
  const fileList = h('div', { class: 'filelist', id: 'chosen-files' });
  const uploadMsg = h('div', {});
  const uploadBtn = h('button', { class: 'btn btn-primary', type: 'submit', id: 'upload-submit', disabled: true }, 'Upload and ingest');
  const { zone, input } = dropZone({
    id: 'pdf-files', multiple: true, accept: '.pdf,.zip,application/pdf,application/zip',
    label: 'Drop PDFs or a zip of PDFs here, or click to choose',
    hint: `up to ${info.max_upload_mb} MB per upload`,
    onFiles: (files) => {
      // what is plainly not a PDF or zip stays out, so that one stray file does not refuse the upload
      const uploadable = (f) => info.upload_types.includes(f.type) || /\.(pdf|zip)$/i.test(f.name);
      chosen = [...files].filter(uploadable);
      const left = [...files].filter((f) => !uploadable(f));
      const total = chosen.reduce((s, f) => s + f.size, 0);
      fileList.textContent = chosen.length ? `${chosen.length} file${chosen.length === 1 ? '' : 's'} (${fileSize(total)}): ${chosen.map((f) => f.name).join(', ')}` : '';
      uploadBtn.disabled = chosen.length === 0;
      uploadMsg.replaceChildren();
      if (left.length) {
        uploadMsg.append(notice(`Left out, not a PDF or zip: ${left.map((f) => f.name).join(', ')}.`, 'warn'));
      }
      if (total > info.max_upload_mb * 1024 * 1024) {
        uploadMsg.append(notice(`That is more than the ${info.max_upload_mb} MB limit per upload; upload in parts.`, 'error'));
        uploadBtn.disabled = true;
      }
    },
  });
  const uploadForm = h('form', { class: 'panel', id: 'upload-pdfs' }, h('h3', {}, 'Add papers'), zone, fileList,
    h('div', { class: 'row', style: 'margin-top:12px' }, uploadBtn), uploadMsg);
  uploadForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!chosen.length) return;
    const body = new FormData();
    chosen.forEach((f) => body.append('files', f, f.name));
    uploadBtn.disabled = true;
    uploadMsg.replaceChildren(loading('Uploading…'));
    try {
      const r = await api('admin/collections', { method: 'POST', body, token, signal });
      uploadMsg.replaceChildren(notice(`Upload received: job ${r.job_id.slice(0, 8)} with ${r.total} file${r.total === 1 ? '' : 's'}.`, 'ok'));
      if (r.skipped && r.skipped.length) {  // the server left these out for their type (listed in the job too)
        uploadMsg.append(notice(`Left out, not a PDF or zip: ${r.skipped.map((f) => f.name).join(', ')}.`, 'warn'));
      }
      chosen = []; input.value = ''; fileList.textContent = '';
      addJob({ job_id: r.job_id, status: r.status, done: 0, total: r.total }, true);
    } catch (err) {
      if (err.name === 'AbortError') return;
      uploadMsg.replaceChildren(notice(err.message, 'error'));
      uploadBtn.disabled = false;
    }
  });

  // ---- index & delete
  const idxMsg = h('div', {});
  const idxState = h('p', { class: 'muted small', id: 'index-state' });
  let indexVersion = null;
  // after a job or a refresh: poll until a new index version is published (at most ~2 min)
  function watchIndex(tries = 60) {
    const before = indexVersion;
    const t = setTimeout(async () => {
      timers.delete(t);
      await showIndex();
      if (indexVersion === before && tries > 1) watchIndex(tries - 1);
    }, 2000);
    timers.add(t);
  }
  async function showIndex() {
    try {
      const r = await fetch('/readyz', { signal }).then((x) => x.json());
      indexVersion = r.index.version;
      idxState.textContent = r.index.loaded
        ? `Index ${r.index.version}: ${plural(r.index.n_figures, 'figure')}, ${plural(r.index.n_tables ?? 0, 'table')}${r.index.has_vectors ? ', with embeddings' : ''}.`
        : (r.index.reason || 'No index.');
    } catch (err) { if (err.name !== 'AbortError') idxState.textContent = 'Index state unavailable.'; }
  }
  const reindexBtn = h('button', { class: 'btn', type: 'button', id: 'reindex' }, 'Rebuild search index');
  reindexBtn.addEventListener('click', async () => {
    reindexBtn.disabled = true;
    try {
      await api('admin/reindex', { method: 'POST', token, signal });
      idxMsg.replaceChildren(notice('Index refresh queued; the new version is used as soon as it is built.', 'ok'));
      watchIndex();
    } catch (err) { if (err.name !== 'AbortError') idxMsg.replaceChildren(notice(err.message, 'error')); }
    finally { reindexBtn.disabled = false; }
  });
  const signOut = h('button', { class: 'btn', type: 'button', id: 'sign-out' }, 'Sign out');
  signOut.addEventListener('click', () => { sessionStorage.removeItem(KEY); renderLogin(root, { signal }); });

  const tools = h('div', { class: 'panel' }, h('h3', {}, 'Search index'), idxState, reindexBtn, idxMsg,
    h('h3', { style: 'margin-top:18px' }, 'Remove a paper'),
    h('p', { class: 'muted small', id: 'remove-help' }, 'Open the paper (', h('a', { href: '#/papers' }, 'Papers'),
      ' or a job\'s “open paper” link) and choose “Remove paper” under its title; it asks before removing anything.'));

  // ---- jobs
  const jobsBox = h('div', { id: 'jobs' });
  const jobsPanel = h('div', { class: 'panel' }, h('h3', {}, 'Ingest jobs'), jobsBox);
  const jobEls = new Map();

  function jobView(j, filesOpen = false) {
    const pct = j.total ? Math.round((100 * j.done) / j.total) : (j.status === 'done' ? 100 : 0);
    const state = j.status === 'failed' ? 'failed' : j.status === 'done' ? 'done' : '';
    const counts = Object.entries(j.counts || {}).map(([k, v]) => `${v} ${statusWord(k)}`).join(', ');
    const el = h('div', { class: 'job', dataset: { jobId: j.job_id, status: j.status } },
      h('div', { class: 'job-head' },
        h('strong', {}, `Job ${j.job_id.slice(0, 8)}`),
        h('span', {}, h('span', { class: `badge ${j.status}` }, j.status), ' ', h('span', { class: 'muted small' }, `${j.done} / ${j.total} files`))),
      h('div', { class: `progress ${state}`, role: 'progressbar', 'aria-valuemin': '0', 'aria-valuemax': String(j.total), 'aria-valuenow': String(j.done), 'aria-label': 'Job progress' },
        h('span', { style: `width:${pct}%` })),
      jobTimes(j),
      counts ? h('div', { class: 'muted small' }, counts) : null,
      indexLine(j),
      j.error ? notice(j.error, 'error') : null,
      jobActions(j));
    if (j.files && j.files.length) {
      const table = (files) => h('div', { class: 'table-wrap' }, h('table', { class: 'files' },
        h('thead', {}, h('tr', {}, h('th', {}, 'File'), h('th', {}, 'Result'), h('th', {}, 'Figures'), h('th', {}, 'Tables'), h('th', {}, ''))),
        h('tbody', {}, files.map((f) => ({ ...f, job_id: j.job_id, retryable: f.retryable && !IN_PROGRESS.has(j.status) })).map((f) => h('tr', {},
          h('td', { class: 'name' }, f.name),
          h('td', {}, h('span', { class: `badge ${f.status}` }, statusLabel(f.status))),
          h('td', { class: 'num', 'data-label': f.n_figures === 1 ? 'figure' : 'figures' }, UNFINISHED.has(f.status) ? '…' : String(f.n_figures)),
          h('td', { class: 'num', 'data-label': f.n_tables === 1 ? 'table' : 'tables' }, UNFINISHED.has(f.status) ? '…' : String(f.n_tables ?? 0)),
          fileOutcome(f))))));
      if (j.files.length <= LONG_JOB) {
        el.append(table(j.files));
      } else {
        // a long job's files are folded; the ones that could not be read are not left among them
        // (5 failures of 168 files were a scroll through 13,000 pixels away)
        const look = j.files.filter((f) => NEEDS_LOOK.has(f.status));
        const rest = j.files.filter((f) => !NEEDS_LOOK.has(f.status));
        if (look.length) {
          el.append(h('div', { class: 'small job-look', id: `look-${j.job_id.slice(0, 8)}` },
            `${look.length === 1 ? '1 file was' : `${look.length} files were`} not added:`), table(look));
        }
        if (rest.length) {
          el.append(h('details', { class: 'job-files', open: filesOpen },
            h('summary', { class: 'small' }, look.length ? `The ${rest.length} other file${rest.length === 1 ? '' : 's'}` : `The ${rest.length} files`), table(rest)));
        }
      }
    }
    return el;
  }

  // Whether the job's new figures can be found yet: a job is "indexing" until its index version is
  // published, and then searchable once this server serves that version.
  function indexLine(j) {
    const line = (text, cls = '') => h('div', { class: `small job-index ${cls}`, dataset: { indexState: j.index_state || '' } }, text);
    if (j.status === 'indexing') return line('All files read; indexing the new papers: their figures are not searchable yet…', 'muted');
    if (j.status !== 'done' || !j.index_state) return null;
    if (j.searchable) return line(`Searchable: its new figures are in the search index${j.index_version ? ` (since ${j.index_version})` : ''}.`, 'ok-text');
    if (j.searchable == null) {  // it added no figure (or its papers were removed since)
      const ok = (j.files || []).filter((f) => f.status === 'ok');
      if (ok.length && ok.every(foundNothing)) {
        return line(`Nothing new to search: ${ok.length === 1 ? 'its paper holds' : `its ${ok.length} papers hold`} no captioned figure or table.`, 'muted');
      }
      return line(j.index_state === 'published' ? `Indexed in ${j.index_version}.` : 'No new figures: the search index is unchanged.', 'muted');
    }
    if (j.index_state === 'failed') {
      return line(`Not searchable yet: the index build failed (${j.index_error || 'see the server log'}). Retry it below or rebuild the search index.`, 'err');
    }
    if (j.index_state === 'published') return line(`Index ${j.index_version || ''} published; loading it…`, 'muted');
    return line(`Not searchable yet: ${j.index_state === 'off' ? 'automatic indexing is off; ' : ''}rebuild the search index.`, 'muted');
  }

  // Retry: the failed files whose bytes are kept and whose failure a retry may fix, the unfinished
  // files of an interrupted job, a failed index build. Files that failed for their own bytes fail
  // the same way again: a second, plainer button reads them anyway (after an upgrade or a raised limit).
  function jobActions(j) {
    if (IN_PROGRESS.has(j.status)) return null;
    const n = j.retryable || 0;
    const own = j.retryable_file_errors || 0;
    const label = n ? `Retry ${plural(n, 'failed file')}` : j.status === 'interrupted' || j.status === 'failed' ? 'Resume the job'
      : j.index_state === 'failed' ? 'Retry the index build' : null;
    const buttons = [];
    if (label) {
      const btn = h('button', { class: 'btn btn-small job-retry', type: 'button' }, label);
      btn.addEventListener('click', () => retry(j.job_id, btn));
      buttons.push(btn);
    }
    if (own) {
      const anyway = h('button', { class: 'text-btn job-retry-own', type: 'button',
        title: 'They failed for their own bytes and fail the same way again, unless the server was upgraded or a limit raised since' },
      `Read the ${plural(own, 'broken file')} again anyway`);
      anyway.addEventListener('click', () => retry(j.job_id, anyway, null, true));
      buttons.push(anyway);
    }
    return buttons.length ? h('div', { class: 'job-actions' }, ...buttons) : null;
  }

  async function retry(jobId, btn, fileId = null, includeFileErrors = false) {
    btn.disabled = true;
    const query = fileId != null ? `?file_id=${fileId}` : includeFileErrors ? '?include_file_errors=true' : '';
    try {
      await api(`admin/jobs/${jobId}/retry${query}`, { method: 'POST', token, signal });
      addJob({ ...(jobData.get(jobId) || {}), job_id: jobId, status: 'queued' });
    } catch (err) {
      if (err.name === 'AbortError') return;
      btn.disabled = false;
      btn.parentElement.append(notice(err.message, 'error'));
    }
  }

  // The last column: the paper a file added, the paper a duplicate repeats, or why a file failed
  // (red) or was skipped (neutral: not a PDF is no fault).
  function fileOutcome(f) {
    if (f.status === 'duplicate' && f.duplicate_of) {
      return h('td', { class: 'note' }, f.error ? `${f.error.replace(/ \(.*\)$/, '')} · ` : '',
        h('a', { href: `#/paper/${f.duplicate_of}`, class: 'original-paper' }, 'open the original paper →'));
    }
    const open = f.paper_id && (f.status === 'ok' || f.status === 'no_text')
      ? h('a', { href: `#/paper/${f.paper_id}`, class: 'paper-result' }, 'open paper →') : null;
    if (!f.error) {
      if (!foundNothing(f)) return h('td', {}, open);
      return h('td', { class: 'note found-nothing', title: 'Figures and tables are taken where a caption (“Figure 2: …”) is printed' },
        'No captioned figure or table found', open ? ' · ' : null, open);
    }
    let again = null;
    if (f.retryable && f.retry_may_help) {
      again = h('button', { class: 'btn btn-small file-retry', type: 'button', title: `Read ${f.name} again` }, 'Retry');
      again.addEventListener('click', () => retry(f.job_id, again, f.file_id));
    }
    return h('td', { class: f.status === 'failed' ? 'err' : 'note', dataset: { errorKind: f.error_kind || '' } },
      f.error, open ? ' · ' : null, open, verdict(f), again ? ' ' : null, again);
  }

  // In plain words, whether reading a failed file again may help (the server's rule, `retry_may_help`).
  function verdict(f) {
    if (f.status !== 'failed' || f.retry_may_help == null) return null;
    const text = f.error_kind === 'missing' ? 'Its bytes are gone: upload it again.'
      : !f.retry_may_help ? 'The file itself is at fault: reading it again fails the same way.'
        : f.error_kind === 'unknown' ? 'Cause not recorded: a retry will tell.'
          : 'Not the file\'s fault: a retry may work.';
    return h('div', { class: `file-verdict ${f.retry_may_help ? 'may-help' : 'own-fault'}` }, text);
  }

  const jobData = new Map();
  function addJob(j, top = false) {
    jobData.set(j.job_id, j);
    const old = jobEls.get(j.job_id);
    const el = jobView(j, Boolean(old && old.querySelector('details.job-files[open]')));  // a poll keeps it unfolded
    if (old) old.replaceWith(el);
    else if (top) jobsBox.prepend(el);
    else jobsBox.append(el);
    jobEls.set(j.job_id, el);
    jobsBox.querySelector('.empty')?.remove();
    // a published version this server has not loaded yet: look again shortly
    const loading = j.status === 'done' && j.index_state === 'published' && j.searchable === false;
    if (IN_PROGRESS.has(j.status) || !j.files || loading) poll(j.job_id);
  }

  function poll(id) {
    const t = setTimeout(async () => {
      timers.delete(t);
      try {
        const before = jobEls.get(id)?.dataset.status;
        const j = await api(`admin/jobs/${id}`, { token, signal });
        addJob(j);
        const finished = j.status === 'done' || j.status === 'failed';
        // the index line follows the job's end, and again when the server has loaded the version
        // the job published (a job may end before that: then it is polled until it is searchable)
        if (finished && (IN_PROGRESS.has(before) || j.searchable)) showIndex();
      } catch (err) {
        if (err.name === 'AbortError') return;
        const el = jobEls.get(id);
        if (el) el.append(notice(`Cannot get the job's progress: ${err.message}`, 'error'));
      }
    }, POLL_MS);
    timers.add(t);
  }

  // "3 minutes ago" stays true while the page is open
  (function tick() {
    const t = setTimeout(() => {
      timers.delete(t);
      root.querySelectorAll('.job-times time[datetime]').forEach((el) => { el.textContent = whenText(el.getAttribute('datetime')); });
      tick();
    }, 30_000);
    timers.add(t);
  }());

  root.replaceChildren(
    h('div', { class: 'bar' }, h('h1', {}, 'Admin'), h('span', { style: 'margin-left:auto' }, signOut)),
    h('div', { class: 'two-col' }, h('div', {}, uploadForm, tools), jobsPanel));
  showIndex();
  const wait = loading('Loading jobs…');
  jobsBox.append(wait);
  const more = h('button', { class: 'btn', type: 'button', id: 'more-jobs', hidden: true }, 'Show older jobs');
  jobsPanel.append(more);
  let next = null;
  async function loadJobs() {
    const page = await api(`admin/jobs?limit=${PAGE}${next ? `&before=${next}` : ''}`, { token, signal });
    // finished jobs are fetched once for their per-file results; a job uploaded meanwhile stays on top
    for (const j of page.items) if (!jobEls.has(j.job_id)) addJob(j);
    next = page.next_before;
    more.hidden = !next;
  }
  more.addEventListener('click', async () => {
    more.disabled = true;
    try { await loadJobs(); } catch (err) { if (err.name !== 'AbortError') more.after(notice(err.message, 'error')); }
    finally { more.disabled = false; }
  });
  await loadJobs();
  wait.remove();
  if (!jobEls.size) jobsBox.append(empty('No jobs yet.', 'Uploads appear here with their progress.'));
}
