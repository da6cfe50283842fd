// Paper page (figures in central order or in paper order, the PDF, cited and citing papers) and
// the paper list.
import { api } from '../api.js';
import { h, append, loading, empty, figureCard, gridKeys, setTitle, foldText, asSentence } from '../ui.js';
import { removeControl } from './paper_remove.js';

function paperList(items, none) {
  if (!items.length) return h('p', { class: 'muted' }, none);
  return h('ul', {}, items.map((p) => h('li', {}, h('a', { href: `#/paper/${p.paper_id}` }, p.title), p.year ? h('span', { class: 'muted' }, ` (${p.year})`) : null)));
}

const byNumber = (a, b) => a.number - b.number || a.page - b.page;

// A file kept for the admin's job view but not in the collection (failed, no text layer, a second
// copy of a paper): what happened to it and what to do, in place of the figures and citations
// such a file does not have.
function outsideCollection(p) {
  const why = p.error ? asSentence(p.error) : '';
  const parts = p.status === 'failed'
    ? ['This file could not be read, so it is not in the collection. ', why,
      ' Once the file is fixed, upload it again on the ', h('a', { href: '#/admin' }, 'Admin page'), ': a file that failed is read again.']
    : p.status === 'duplicate'
      ? ['This file repeats a paper of the collection, so it is not in the collection itself. ', why,
        p.duplicate_of ? h('span', {}, ' ', h('a', { href: `#/paper/${p.duplicate_of}`, class: 'original-paper' }, 'Open the original paper →')) : null]
      : ['This file has no text layer that could be read, so it is not in the collection. ', why];
  return h('div', { class: 'notice warn', role: 'status', id: 'not-in-collection' }, parts);
}

// Where a long abstract folds to its first lines (style.css: .abstract.folded), so that a phone
// reaches the figures on its first screens.
const NARROW = '(max-width: 759px)';

export async function renderPaper(root, id, params, { signal }) {
  root.append(loading());
  const p = await api(`papers/${id}`, { signal });
  setTitle(p.title);
  root.replaceChildren();
  const ranked = p.figures.some((f) => f.kind === 'figure' && f.central_rank);
  // central order is the server's (central figure first); paper order is by number
  const order = params.get('order') === 'paper' || !ranked ? 'paper' : 'central';
  let figs = p.figures.filter((f) => f.kind === 'figure');
  if (order === 'paper') figs = [...figs].sort(byNumber);
  const tables = p.figures.filter((f) => f.kind !== 'figure').sort(byNumber);
  const outside = p.status !== 'ok';
  const status = outside ? h('span', { class: `badge ${p.status}` }, p.status.replace('_', ' ')) : null;

  const grid = h('div', { class: 'grid even', id: 'paper-figures' });
  gridKeys(grid);
  for (const f of figs) grid.append(figureCard(f, { showPaper: false }));
  const orderLink = (value, label) => h('a', { href: value === 'paper' ? `#/paper/${id}?order=paper` : `#/paper/${id}`,
    class: `seg${order === value ? ' on' : ''}`, 'aria-current': order === value ? 'true' : null, dataset: { order: value } }, label);
  const orderSwitch = ranked
    ? h('span', { class: 'segmented', id: 'order-switch', role: 'group', 'aria-label': 'Order of the figures' },
        orderLink('central', 'Central first'), orderLink('paper', 'In paper order'))
    : h('span', { class: 'muted small' }, ' · in order of appearance');

  const abstract = p.abstract ? h('p', { class: 'abstract', id: 'paper-abstract' }, p.abstract) : null;
  const abstractFold = abstract ? foldText(abstract, { id: 'abstract-toggle', what: 'abstract', media: NARROW }) : null;

  // append() skips the parts a paper lacks (DOM append would print them as "null")
  append(root, [
    h('div', { class: 'crumbs' }, h('a', { href: '#/papers' }, '← All papers')),
    h('div', { class: 'panel paper-head' },
      h('h1', { id: 'paper-title' }, p.title, ' ', status,
        p.source_kind && p.source_kind !== 'born_digital'
          ? h('span', { class: 'badge scanned', title: p.source_kind === 'scanned' ? 'A scan: text and captions read by OCR' : 'A scan with its own text layer' }, 'scanned')
          : null),
      p.authors ? h('p', { class: 'authors' }, p.authors) : null,
      h('div', { class: 'meta' }, p.year ? h('span', {}, String(p.year)) : null, p.n_pages ? h('span', {}, `${p.n_pages} pages`) : null,
        outside && !figs.length ? null : h('span', {}, `${figs.length} figure${figs.length === 1 ? '' : 's'}`), tables.length ? h('span', {}, `${tables.length} table${tables.length === 1 ? '' : 's'}`) : null,
        p.source ? h('span', { class: 'source-file', title: 'Source file' }, p.source) : null,
        p.pdf_url ? h('a', { href: p.pdf_url, target: '_blank', rel: 'noopener', id: 'paper-pdf' }, 'Open the PDF ↗') : null),
      outside ? outsideCollection(p) : p.error ? h('p', { class: 'muted small' }, p.error) : null,
      abstract, abstractFold?.button,
      removeControl(p, figs.length, tables.length, signal)),
    outside && !p.figures.length ? null : [
      h('div', { class: 'section-head' }, h('h2', {}, 'Figures'), figs.length ? orderSwitch : null),
      figs.length ? grid : empty('No figures were found in this paper.', h('span', { id: 'no-figures-why' },
        ' Figures are found by their printed captions (“Figure 2: …”): plots printed without one are not taken.'))],
    tables.length ? h('h2', {}, 'Tables') : null,
    tables.length ? (() => { const g = h('div', { class: 'grid even tables', id: 'paper-tables' }); tables.forEach((t) => g.append(figureCard(t, { showPaper: false }))); gridKeys(g); return g; })() : null,
    outside ? null : h('div', { class: 'links', style: 'margin-top:18px' },
      h('div', { class: 'panel', id: 'cites' }, h('h3', {}, `Cites (${p.cites.length} in the collection)`), paperList(p.cites, 'No cited paper is in the collection.')),
      h('div', { class: 'panel', id: 'cited-by' }, h('h3', {}, `Cited by (${p.cited_by.length} in the collection)`), paperList(p.cited_by, 'No paper of the collection cites it.')))]);
  abstractFold?.check();  // once on the page: only a clamp that cuts text shows the button
}

const PAGE = 50;
const SORTS = [['recent', 'Recently added'], ['year', 'Year (newest first)'], ['title', 'Title (A–Z)'], ['figures', 'Most figures']];

function papersHash(q, sort, offset = 0) {
  const p = new URLSearchParams();
  if (q) p.set('q', q);
  if (sort && sort !== 'recent') p.set('sort', sort);
  if (offset) p.set('offset', String(offset));
  const s = p.toString();
  return `#/papers${s ? `?${s}` : ''}`;
}

// The paper list: a search over titles and authors, a sort, and each paper's central figure.
export async function renderPapers(root, params, { signal }) {
  setTitle('Papers');
  const offset = Math.max(0, Number(params.get('offset')) || 0);
  const q = (params.get('q') || '').trim();
  const sort = SORTS.some(([v]) => v === params.get('sort')) ? params.get('sort') : 'recent';
  root.append(loading());
  const r = await api(`papers?offset=${offset}&limit=${PAGE}&sort=${sort}${q ? `&q=${encodeURIComponent(q)}` : ''}`, { signal });
  root.replaceChildren();
  const input = h('input', { type: 'search', id: 'paper-q', name: 'q', placeholder: 'Title or author', 'aria-label': 'Search papers by title or author', value: q });
  const select = h('select', { id: 'paper-sort', name: 'sort', 'aria-label': 'Sort papers' },
    SORTS.map(([v, label]) => h('option', { value: v, selected: v === sort }, label)));
  const form = h('form', { class: 'filters paper-tools', id: 'paper-tools', role: 'search' },
    h('div', { class: 'filter-row' },
      h('label', { class: 'f grow' }, 'Find', input),
      h('label', { class: 'f' }, 'Sort by', select),
      h('button', { class: 'btn', type: 'submit' }, 'Apply')));
  form.addEventListener('submit', (e) => { e.preventDefault(); location.hash = papersHash(input.value.trim(), select.value); });
  select.addEventListener('change', () => { location.hash = papersHash(input.value.trim(), select.value); });
  const count = q ? `${r.total} match${r.total === 1 ? '' : 'es'} for “${q}”` : `${r.total} in the collection`;
  root.append(h('div', { class: 'bar' }, h('h1', {}, 'Papers'), h('span', { class: 'muted small', id: 'paper-count' }, count)), form);
  if (!r.items.length) {
    root.append(q
      ? empty('No paper matches.', h('a', { href: papersHash('', sort) }, 'Show all papers'))
      : empty('No papers yet.', h('span', {}, 'An administrator can add papers on the ', h('a', { href: '#/admin' }, 'Admin page'), '.')));
    return;
  }
  root.append(h('div', { class: 'panel' }, h('ul', { class: 'list paper-rows', id: 'paper-list' }, r.items.map((p) => h('li', {},
    h('a', { class: 'paper-thumb', href: `#/paper/${p.paper_id}`, tabindex: '-1', 'aria-hidden': 'true' },
      p.central_figure ? h('img', { src: p.central_figure.thumbnail_url, alt: '', loading: 'lazy', decoding: 'async' }) : null),
    h('div', {},
      h('a', { href: `#/paper/${p.paper_id}` }, p.title),
      p.status !== 'ok' ? h('span', {}, ' ', h('span', { class: `badge ${p.status}` }, p.status.replace('_', ' '))) : null,
      // as on the paper's page: its text and captions were read by OCR
      p.source_kind && p.source_kind !== 'born_digital'
        ? h('span', {}, ' ', h('span', { class: 'badge scanned', title: p.source_kind === 'scanned' ? 'A scan: text and captions read by OCR' : 'A scan with its own text layer' }, 'scanned'))
        : null,
      h('div', { class: 'sub' }, [p.authors, p.year, `${p.n_figures} figure${p.n_figures === 1 ? '' : 's'}`,
        p.n_tables ? `${p.n_tables} table${p.n_tables === 1 ? '' : 's'}` : null].filter(Boolean).join(' · ')),
      // the central figure opens from the list itself (it was named without a link)
      p.central_figure ? h('div', { class: 'sub small' }, 'Central figure: ',
        h('a', { href: `#/figure/${p.central_figure.figure_id}`, class: 'central-link' }, p.central_figure.label)) : null))))));
  if (r.total > PAGE) {
    const prev = offset > 0 ? h('a', { class: 'btn', href: papersHash(q, sort, Math.max(0, offset - PAGE)) }, '← Previous') : null;
    const next = offset + PAGE < r.total ? h('a', { class: 'btn', href: papersHash(q, sort, offset + PAGE) }, 'Next →') : null;
    root.append(h('div', { class: 'pager' }, prev, h('span', { class: 'muted small' }, `${offset + 1}–${Math.min(r.total, offset + PAGE)} of ${r.total}`), next));
  }
}
