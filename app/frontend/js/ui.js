// DOM helpers and shared widgets. Everything user-provided goes through textContent (no innerHTML).

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) { el.replaceChildren(); return el; }

export function loading(text = 'Loading…') { return h('div', { class: 'loading', role: 'status' }, text); }

export function notice(text, kind = '') { return h('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text); }

export function empty(title, text) { return h('div', { class: 'empty' }, h('strong', {}, title), text || ''); }

export function setTitle(text) { document.title = text ? `${text} · figsearch` : 'figsearch'; }

export function fmt(x, digits = 2) {
  return x === null || x === undefined ? '–' : Number(x).toFixed(digits);
}

// Caption without the leading "Figure 3:" (shown separately as the label).
export function captionBody(f) {
  const c = f.caption || '';
  const m = c.match(/^\s*(fig(ure)?|table|tab)\.?\s*[A-Z]?\d+[a-z]?\s*[:.|-]?\s*/i);
  return m ? c.slice(m[0].length) : c;
}

function thumb(f) {
  const box = h('div', { class: 'thumb' });
  // a table's small thumbnail is unreadable: its crop, scaled by the browser, stays legible
  const img = h('img', { src: f.kind === 'table' ? f.image_url : f.thumbnail_url, alt: `${f.label || 'Figure'}: ${captionBody(f).slice(0, 120)}`, loading: 'lazy', decoding: 'async' });
  img.addEventListener('error', () => { box.classList.add('missing'); box.replaceChildren('image unavailable'); }, { once: true });
  box.append(img);
  return box;
}

// A figure card linking to its page; `extra` nodes are appended to the body (e.g. the "why").
export function figureCard(f, { extra = null, showPaper = true } = {}) {
  const body = h('div', { class: 'card-body' },
    h('div', { class: 'label' }, f.label || `${f.kind === 'table' ? 'Table' : 'Figure'} ${f.number}`,
      f.figure_type && f.kind !== 'table' ? h('span', { class: 'type', title: 'Figure type' }, f.figure_type.replace(/_/g, ' ')) : null),
    h('div', { class: 'cap' }, captionBody(f)),
    showPaper && f.paper_title ? h('div', { class: 'paper' }, f.paper_title + (f.paper_year ? ` (${f.paper_year})` : '')) : null,
    extra);
  const card = h('a', { class: 'card', href: `#/figure/${f.figure_id}`, dataset: { figureId: f.figure_id } },
    thumb(f), body);
  if (f.central_rank === 1) card.append(h('span', { class: 'badge central', title: 'The central figure of its paper' }, '★ central figure'));
  if (f.text_source === 'ocr') card.append(h('span', { class: 'badge scanned', title: 'From a scanned page: the caption was read by OCR' }, 'scanned · OCR'));
  return card;
}

// The sentence that matched a text query, its matched words highlighted, and where it comes from.
export function snippetBlock(hit) {
  const s = hit.snippet;
  if (!s) return unmatchedWhy(hit);
  const parts = [];
  let at = 0;
  for (const [a, b] of s.highlights || []) {
    if (a > at) parts.push(s.text.slice(at, a));
    parts.push(h('mark', {}, s.text.slice(a, b)));
    at = b;
  }
  parts.push(s.text.slice(at));
  const where = {
    caption: ['caption', 'Matched in the caption'],
    body: ['body text', 'Matched in the body text that mentions the figure'],
    table: ['table cells', 'Matched in the cells of the table'],
  }[s.source] || ['body text', 'Matched in the body text'];
  const panel = hit.panel
    ? h('span', { class: 'src', title: `The query matches panel (${hit.panel.label}): ${hit.panel.caption_part}` }, `panel (${hit.panel.label})`)
    : null;
  return h('div', { class: 'snippet' },
    h('span', { class: 'src', title: where[1] }, where[0]), panel ? ' ' : null, panel,
    ' ', ...parts);
}

// A result with no matching sentence says how it was found: by the figure type the query names,
// or by meaning alone (none of the query's words is in its text).
function unmatchedWhy(hit) {
  const byType = (hit.reasons || []).find((r) => r.startsWith('looks like'));
  if (byType) {
    return h('div', { class: 'snippet why-found' },
      h('span', { class: 'src', title: 'Found because its picture is classified as the figure type the query names' }, 'figure type'),
      ` ${byType}`);
  }
  if (hit.embedding_score === null || hit.embedding_score === undefined) return null;
  return h('div', { class: 'snippet why-found' },
    h('span', { class: 'src', title: 'Found by the meaning of its text: none of the query words occurs in it' }, 'meaning'),
    ' close in meaning, no shared words');
}

// "Why" a result: reasons in words, informative shared terms, and the lexical vs embedding score.
// Results found by an uploaded picture (`picture`) have no words to share: only the reasons.
export function whyBlock(hit, maxLexical, { picture = false } = {}) {
  if (picture) {
    const reasons = hit.reasons || [];
    return h('div', { class: 'why' }, h('div', { class: 'chips reasons' },
      (reasons.length ? reasons : ['close in layout and colours']).map((r) => h('span', { class: 'chip reason' }, r))));
  }
  const lexPct = maxLexical > 0 ? Math.max(2, Math.round(100 * hit.lexical_score / maxLexical)) : 0;
  const emb = hit.embedding_score;
  const embPct = emb === null || emb === undefined ? 0 : Math.max(2, Math.round(100 * Math.max(0, emb)));
  const terms = (hit.matched_terms || []).slice(0, 6);
  const reasons = hit.reasons || [];
  return h('div', { class: 'why' },
    reasons.length ? h('div', { class: 'chips reasons' }, reasons.map((r) => h('span', { class: 'chip reason' }, r))) : null,
    terms.length
      ? h('div', { class: 'chips', title: 'Informative terms shared with this figure' }, h('span', {}, 'shared:'), terms.map((t) => h('span', { class: 'chip' }, t)))
      : (reasons.length ? null : h('div', {}, 'no shared terms (semantic match)')),
    h('div', { class: 'scores' },
      h('span', {}, 'lexical'), h('div', { class: 'meter', title: 'BM25 score relative to the best result' }, h('span', { style: `width:${lexPct}%` })), h('span', {}, fmt(hit.lexical_score, 1)),
      h('span', {}, 'embedding'), h('div', { class: 'meter emb', title: 'Cosine similarity of the MiniLM embeddings' }, h('span', { style: `width:${embPct}%` })), h('span', {}, emb === null || emb === undefined ? 'n/a' : fmt(emb, 2))));
}

// Arrow keys move the focus between the cards of a grid (Enter opens, as links do).
export function gridKeys(grid) {
  grid.addEventListener('keydown', (e) => {
    if (!['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End'].includes(e.key)) return;
    const cards = [...grid.querySelectorAll(':scope > .card')];
    const i = cards.indexOf(document.activeElement);
    if (i < 0) return;
    const cols = Math.max(1, Math.round(grid.clientWidth / cards[0].getBoundingClientRect().width));
    const step = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -cols, ArrowDown: cols }[e.key];
    let j = e.key === 'Home' ? 0 : e.key === 'End' ? cards.length - 1 : i + step;
    j = Math.max(0, Math.min(cards.length - 1, j));
    if (j !== i) { e.preventDefault(); cards[j].focus(); }
  });
}

// A drop zone around a file input. onFiles(FileList) is called on drop or selection.
export function dropZone({ accept, multiple = false, label, hint, onFiles, id }) {
  const input = h('input', { type: 'file', accept, multiple: multiple || null, id });
  const zone = h('label', { class: 'drop', for: id }, input, h('strong', {}, label), h('div', { class: 'small' }, hint));
  input.addEventListener('change', () => { if (input.files.length) onFiles(input.files); });
  for (const ev of ['dragenter', 'dragover']) zone.addEventListener(ev, (e) => { e.preventDefault(); zone.classList.add('over'); });
  for (const ev of ['dragleave', 'drop']) zone.addEventListener(ev, () => zone.classList.remove('over'));
  zone.addEventListener('drop', (e) => { e.preventDefault(); if (e.dataTransfer.files.length) onFiles(e.dataTransfer.files); });
  return { zone, input };
}

export function mb(bytes) { return `${(bytes / 1024 / 1024).toFixed(bytes < 1024 * 1024 ? 2 : 1)} MB`; }
