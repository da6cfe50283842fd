// Search by an uploaded figure image: by the picture itself, or by its caption's text when one is
// given. The server says whether picture search is available (/api/v1/info).
import { api, serverInfo } from '../api.js';
import { h, notice, empty, figureCard, whyBlock, gridKeys, setTitle, dropZone, fileSize, loading, asSentence } from '../ui.js';

// Below the form on a phone, the answer would arrive off screen (the button seemed to do nothing):
// when hardly any of the first result shows, the page scrolls to what the picture is and the results.
function bringIntoView(summary, grid) {
  const first = grid.firstElementChild;
  if (!first || first.getBoundingClientRect().top < window.innerHeight - 120) return;
  const header = document.querySelector('.top');
  const covered = header && getComputedStyle(header).position === 'sticky' ? header.offsetHeight : 0;
  window.scrollTo(0, window.scrollY + summary.getBoundingClientRect().top - covered - 8);
}

// The types a browser gives a file whose name tells nothing of its content.
const UNTYPED = new Set(['', 'application/octet-stream']);

export async function renderUpload(root, { signal }) {
  setTitle('Search by image');
  const info = await serverInfo();
  // a collection without tables is never offered a search among them
  const hasTables = await api('figures?kind=table&limit=1', { signal }).then((r) => r.total > 0).catch((err) => { if (err.name === 'AbortError') throw err; return false; });
  let file = null;
  let previewUrl = null;

  const msg = h('div', { id: 'upload-message' });
  const preview = h('div', { class: 'preview', hidden: true });
  const caption = h('textarea', { id: 'caption', maxlength: '500', placeholder: 'e.g. Figure 2: Accuracy of our method and the baselines as the training set grows', 'aria-describedby': 'caption-help' });
  caption.addEventListener('input', () => { searchKind = 'auto'; });  // a new caption may name the other kind ("Table 2: ...")
  const submit = h('button', { class: 'btn btn-primary', type: 'submit', id: 'find-similar' }, 'Find similar');
  const grid = h('div', { class: 'grid', id: 'image-results' });
  const resultsHead = h('h2', { hidden: true, id: 'image-results-title' }, 'Similar figures');
  // what the picture is searched among: the server's choice (auto), or the other kind when asked
  let searchKind = 'auto';
  gridKeys(grid);

  const { zone } = dropZone({
    id: 'image-file', accept: info.image_types.join(','), label: 'Choose a figure or table image, or drop one here',
    hint: `PNG or JPEG, up to ${info.max_image_mb} MB`,
    onFiles: (files) => {
      const f = files[0];
      msg.replaceChildren();
      // a refused file also drops the one chosen before: the button never searches with a picture not shown
      const refuse = (text) => {
        file = null; preview.hidden = true; preview.replaceChildren(); grid.replaceChildren(); resultsHead.hidden = true;
        msg.replaceChildren(notice(text, 'error'));
      };
      // a file named by no type or a generic one (no extension) is judged by its picture, as the server judges its bytes
      if (!UNTYPED.has(f.type) && !info.image_types.includes(f.type)) { refuse(`${f.name} is not a PNG or JPEG image.`); return; }
      if (f.size > info.max_image_mb * 1024 * 1024) { refuse(`${f.name} is too large (${fileSize(f.size)}; the limit is ${info.max_image_mb} MB).`); return; }
      file = f;
      searchKind = 'auto';
      if (previewUrl) URL.revokeObjectURL(previewUrl);
      previewUrl = URL.createObjectURL(f);
      const img = h('img', { src: previewUrl, alt: 'The chosen figure' });
      img.addEventListener('error', () => { if (file === f) refuse(`${f.name} cannot be read as a picture: its content is not a PNG or JPEG image.`); }, { once: true });
      preview.replaceChildren(img, h('div', {}, h('strong', {}, f.name), h('div', { class: 'muted small' }, fileSize(f.size))));
      preview.hidden = false;
    },
  });

  const form = h('form', { class: 'panel', id: 'upload-form' },
    zone, preview,
    h('label', { class: 'field', for: 'caption' }, 'Caption (optional)'),
    caption,
    h('p', { class: 'muted small', id: 'caption-help' }, info.image_queries
      ? 'Without a caption, figures (or, for a table, tables) are found by the picture; with one, by its text.'
      : 'Searching by the picture itself is not available yet; with a caption, figures are found by its text.'),
    h('div', { class: 'row', style: 'margin-top:10px' }, submit));

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!file) {  // a refused file's reason stays on screen
      if (!msg.querySelector('.notice.error')) msg.replaceChildren(notice('Choose a figure image first.', 'warn'));
      return;
    }
    msg.replaceChildren();
    grid.replaceChildren();
    resultsHead.hidden = true;
    const text = caption.value.trim();
    if (!info.image_queries && !text) {
      // the server would answer 501: say it here without a failing request
      msg.append(notice(asSentence(info.image_queries_message), 'warn'));
      return;
    }
    const body = new FormData();
    body.append('image', file);
    if (text) body.append('caption', text);
    submit.disabled = true;
    msg.append(loading('Searching…'));
    try {
      const r = await api(`search/by-image?k=12${searchKind !== 'auto' ? `&kind=${searchKind}` : ''}`, { method: 'POST', body, signal });
      msg.replaceChildren();
      const things = r.kind === 'table' ? 'tables' : 'figures';
      if (r.mode === 'caption') msg.append(notice(`These ${things} match your caption text; leave the caption empty to search by the picture.`));
      // a picture is searched among tables or figures (the server tells which): the other is one click away
      const other = r.kind === 'table' ? 'figure' : 'table';
      const switchKind = r.kind && (hasTables || other === 'figure') ? h('button', { type: 'button', class: 'text-btn', id: 'switch-kind' }, `Search among ${other}s instead`) : null;
      if (switchKind) switchKind.addEventListener('click', () => { searchKind = other; form.requestSubmit(); });
      if (!r.items.length) { msg.append(empty(`No similar ${things} found.`, r.message ? asSentence(r.message) : ''), switchKind || ''); return; }
      resultsHead.textContent = `Similar ${things}`;
      resultsHead.hidden = false;
      const picture = r.mode === 'image';
      if (!picture && switchKind) {
        msg.append(h('p', { class: 'muted small', id: 'caption-kind' }, switchKind));
      } else if (picture && r.kind === 'table') {
        // the figure types name what a figure shows; a table's picture is told by the tables nearest it
        msg.append(h('p', { class: 'muted small', id: 'query-types' }, 'Your picture looks like a table: these are the tables nearest it. ', switchKind));
      } else if (picture && r.query_types && r.query_types.length) {
        // in words, not scores: a type the classifier is less than even about reads "perhaps ..."
        msg.append(h('p', { class: 'muted small', id: 'query-types', title: 'Figure types classified from your picture' },
          'Your picture looks like: ', r.query_types.map((t) => `${t.score < 0.5 ? 'perhaps ' : ''}${t.type.replace(/_/g, ' ')}`).join(' · '),
          switchKind ? ' · ' : null, switchKind));
      }
      // the server told it by perceptual hashes: the upload is a figure the collection holds, or one of its panels
      const held = picture ? r.items.find((hit) => (hit.reasons || []).includes('same picture'))
        || r.items.find((hit) => hit.panel && (hit.reasons || []).some((x) => x.startsWith('same picture as panel'))) : null;
      if (held) {
        const name = held.label || `${held.kind === 'table' ? 'Table' : 'Figure'} ${held.number}`;
        const isPanel = !(held.reasons || []).includes('same picture');
        msg.append(h('p', { class: 'small', id: 'held-copy' }, 'Your picture is ',
          isPanel ? `panel (${held.panel.label}) of ` : '',
          h('a', { href: `#/figure/${held.figure_id}` }, name), held.paper_title ? ` of “${held.paper_title}”` : '',
          ` (first below); the others are ${things} like it.`));
      }
      for (const hit of r.items) grid.append(figureCard(hit, { extra: whyBlock(hit, { picture }) }));
      bringIntoView(msg, grid);
    } catch (err) {
      if (err.name === 'AbortError') return;
      msg.replaceChildren(notice(asSentence(err.message), err.status === 501 ? 'warn' : 'error'));
    } finally {
      submit.disabled = false;
    }
  });

  root.append(h('div', { class: 'bar' }, h('h1', {}, 'Search by picture')), form, msg, resultsHead, grid);
}
