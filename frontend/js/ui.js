// DOM building and shared widgets. Everything user-provided goes through textContent (no innerHTML).

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

// Merge `part` into the state of the history entry on screen (its address stays): what Back and
// Forward give a page back (app.js passes it to the page as ctx.restore).
export function remember(part) { history.replaceState({ ...(history.state || {}), ...part }, ''); }

// The server's messages are lower-case phrases; pages show them as sentences.
export function asSentence(t) { return t ? `${t[0].toUpperCase()}${t.slice(1)}${/[.!?]$/.test(t) ? '' : '.'}` : t; }

// On a touch screen a search box keeps its on-screen keyboard open after the search, over half of
// the results: the box lets go of the focus once its search is sent. (With a mouse and keyboard it
// keeps it, to refine the query.)
export function doneTyping(input) { if (window.matchMedia('(pointer: coarse)').matches) input.blur(); }

export function setTitle(text) { document.title = text ? `${text} · figsearch` : 'figsearch'; }

// A long text on a narrow screen (`media`) shows its first lines (style.css clamps `.folded`) and a
// text button for the rest, "Show the whole caption", that opens it in place and folds it back.
// `fold.check()`, called once the text is on the page, shows the button only where the clamp
// cuts text; wider screens never show it.
export function foldText(text, { id, what, media }) {
  const btn = h('button', { type: 'button', class: 'text-btn', id, 'aria-controls': text.id, 'aria-expanded': 'false', hidden: true }, `Show the whole ${what}`);
  btn.addEventListener('click', () => {
    const open = text.classList.toggle('folded') === false;
    btn.setAttribute('aria-expanded', String(open));
    btn.textContent = open ? `Show less of the ${what}` : `Show the whole ${what}`;
  });
  text.classList.add('folded');
  const check = () => { btn.hidden = !(window.matchMedia(media).matches && text.scrollHeight > text.clientHeight + 1); };
  return { button: btn, check };
}

// Caption without the leading "Figure 3:" (shown separately as the label).
export function captionBody(f) {
  const c = f.caption || '';
  const m = c.match(/^\s*(fig(ure)?|table|tab)\.?\s*[A-Z]?\d+[a-z]?\s*[:.|-]?\s*/i);
  return m ? c.slice(m[0].length) : c;
}

// A table's crop shrunk to a card is unreadable: the card shows its top rows (and first columns)
// at this share of the crop's size, where printed text stays legible.
const TABLE_SCALE = 0.9;

function thumb(f) {
  const table = f.kind === 'table';
  const box = h('div', { class: table ? 'thumb top-rows' : 'thumb' });
  const img = h('img', { src: table ? f.image_url : f.thumbnail_url, alt: `${f.label || 'Figure'}: ${captionBody(f).slice(0, 120)}`, loading: 'lazy', decoding: 'async' });
  if (table) img.addEventListener('load', () => { img.style.width = `${Math.round(img.naturalWidth * TABLE_SCALE)}px`; }, { once: true });
  img.addEventListener('error', () => { box.classList.add('missing'); box.replaceChildren('image unavailable'); }, { once: true });
  box.append(img);
  return box;
}

// A figure at least this many times as wide as tall (a row of panels) is shrunk past reading in the
// picture beside a phone card's text: there it spans the card, above the text (style.css: .card.wide).
const WIDE = 2.5;

// A figure card: a box holding the link to the figure's page (picture, label, caption, paper) and,
// after the link, the `extra` nodes (the "why", a snippet). The link covers the whole box (style.css:
// .card-link::after), so a click anywhere opens the figure; a button in the extra part (the reasons'
// "+N more") sits above it, outside the link: it is no part of the link's name and is the next Tab
// stop. Badges (central figure, scanned) sit in the card's text, never over the picture.
export function figureCard(f, { extra = null, showPaper = true } = {}) {
  const badges = [
    f.central_rank === 1 ? h('span', { class: 'badge central', title: 'The central figure of its paper' }, '★ central') : null,
    f.text_source === 'ocr' ? h('span', { class: 'badge scanned', title: 'From a scanned page: the caption was read by OCR' }, 'scanned · OCR') : null,
  ].filter(Boolean);
  const body = h('div', { class: 'card-body' },
    h('div', { class: 'label' }, f.label || `${f.kind === 'table' ? 'Table' : 'Figure'} ${f.number}`,
      f.figure_type && f.kind !== 'table' ? h('span', { class: 'type', title: 'Figure type' }, f.figure_type.replace(/_/g, ' ')) : null,
      badges.length ? h('span', { class: 'badges' }, badges) : null),
    captionBody(f)
      ? h('div', { class: 'cap' }, f.caption_highlights?.length ? captionWithMatches(f) : captionBody(f))
      : h('div', { class: 'cap none' }, 'No caption'),
    showPaper && f.paper_title ? h('div', { class: 'paper' }, f.paper_title + (f.paper_year ? ` (${f.paper_year})` : '')) : null);
  const wide = f.kind !== 'table' && f.width && f.height && f.width / f.height >= WIDE;
  return h('div', { class: `card${f.kind === 'table' ? ' table-card' : ''}${wide ? ' wide' : ''}`, dataset: { figureId: f.figure_id } },
    h('a', { class: 'card-link', href: `#/figure/${f.figure_id}` }, thumb(f), body),
    extra ? h('div', { class: 'card-extra' }, extra) : null);
}

// The link of a card (what takes the focus).
export function cardLink(card) { return card.querySelector(':scope > .card-link'); }

// The card whose link has the focus, or null.
function focusedCard() {
  const el = document.activeElement;
  return el && el.classList.contains('card-link') ? el.parentElement : null;
}

function marked(text, highlights) {
  const parts = [];
  let at = 0;
  for (const [a, b] of highlights || []) {
    if (a < at) continue;
    if (a > at) parts.push(text.slice(at, a));
    parts.push(h('mark', {}, text.slice(a, b)));
    at = b;
  }
  parts.push(text.slice(at));
  return parts;
}

// How far into a caption a card surely still shows it (three clamped lines of a phone's card).
const CAPTION_SHOWN = 75;

// The offset of the snippet's text in the card's caption when the snippet is from the caption and
// its first matched word falls in the part shown (the first CAPTION_SHOWN characters), else null.
function inShownCaption(hit) {
  const s = hit.snippet;
  if (!s || s.source !== 'caption') return null;
  const cap = captionBody(hit);
  let at = cap.indexOf(s.text);
  let shift = 0;
  if (at < 0) {  // the caption's first sentence carries the label the card shows apart
    const body = captionBody({ caption: s.text });
    shift = s.text.length - body.length;
    at = cap.indexOf(body);
  }
  if (at < 0) return null;
  const first = (s.highlights || []).map(([, b]) => b - shift).find((b) => b > 0);
  return first !== undefined && at + first <= CAPTION_SHOWN ? at - shift : null;
}

// The card's caption with the query's words marked, as the server found them in the whole
// caption (every word sharing a stem with a query word: "curves" for "curve"), moved to the part
// the card shows (the caption without its label).
export function captionWithMatches(hit) {
  const cap = captionBody(hit);
  const shift = (hit.caption || '').length - cap.length;
  return marked(cap, (hit.caption_highlights || []).map(([a, b]) => [a - shift, b - shift]).filter(([a]) => a >= 0));
}

// The sentence that matched a text query, its matched words highlighted, and where it comes from.
// A match in the caption the card already shows is marked there instead (captionWithMatches).
// `closeMeaning`: the query-to-text cosine from which a result counts as close in meaning (the
// server's ranking thresholds, dense_match_min).
// A long matched sentence (hundreds of characters, a line of code read as prose) is shown as the
// words around its first match: whole, it made its card, and with it every card of its row, a
// screen tall, pushing the next results off the screen. Cut ends are marked with "…".
export const SNIPPET_CHARS = 200;
export function snippetWindow(text, highlights = []) {
  if (text.length <= SNIPPET_CHARS) return { text, highlights };
  const first = highlights.length ? highlights[0][0] : 0;
  let start = Math.max(0, Math.min(first - 60, text.length - SNIPPET_CHARS));
  if (start > 0) {  // begin at a word
    const space = text.indexOf(' ', start - 1);
    start = space >= 0 && space < first ? space + 1 : start;
  }
  let end = Math.min(text.length, start + SNIPPET_CHARS);
  if (end < text.length) {  // end after a word, never inside the first match
    const space = text.lastIndexOf(' ', end);
    const firstEnd = highlights.length ? highlights[0][1] : 0;
    end = space > Math.max(start, firstEnd) ? space : Math.max(end, firstEnd);
  }
  const lead = start > 0 ? '… ' : '';
  const shift = lead.length - start;
  return {
    text: lead + text.slice(start, end) + (end < text.length ? ' …' : ''),
    highlights: highlights.filter(([a, b]) => a >= start && b <= end).map(([a, b]) => [a + shift, b + shift]),
  };
}

export function snippetBlock(hit, closeMeaning) {
  const s = hit.snippet;
  if (!s) return unmatchedWhy(hit, closeMeaning);
  const panel = hit.panel
    ? h('span', { class: 'src', title: `The query matches panel (${hit.panel.label}): ${hit.panel.caption_part}` }, `panel (${hit.panel.label})`)
    : null;
  if (inShownCaption(hit) !== null) return panel ? h('div', { class: 'snippet' }, panel) : null;
  const shown = snippetWindow(s.text, s.highlights);
  const parts = marked(shown.text, shown.highlights);
  const where = {
    caption: ['caption', 'Matched further on in the caption'],
    body: ['body text', 'Matched in the body text that mentions the figure'],
    table: ['table cells', 'Matched in the cells of the table'],
  }[s.source] || ['body text', 'Matched in the body text'];
  return h('div', { class: 'snippet', title: shown.text !== s.text ? s.text : null },
    h('span', { class: 'src', title: where[1] }, where[0]), panel ? ' ' : null, panel,
    ' ', ...parts);
}

// A result with no matching sentence says how it was found: by the figure type the query names
// ("looks like a box plot", or "may show a box plot" when the classifier is less sure),
// by query words it uses where no sentence shows them (e.g. printed inside the figure), or by
// meaning alone, the last only when its text is at least `closeMeaning` close to the query (the
// server's own cut-off for a match by meaning). Otherwise the card says nothing rather than
// something untrue.
function unmatchedWhy(hit, closeMeaning) {
  const byType = (hit.reasons || []).find((r) => r.startsWith('looks like') || r.startsWith('may show'));
  if (byType) {
    const how = byType.startsWith('may show') ? 'may be of the figure type the query names (the classifier is less sure)' : 'is classified as the figure type the query names';
    return h('div', { class: 'snippet why-found' },
      h('span', { class: 'src', title: `Found because its picture ${how}` }, 'figure type'),
      ` ${byType}`);
  }
  const terms = hit.matched_terms || [];
  if (terms.length) {
    return h('div', { class: 'snippet why-found' },
      h('span', { class: 'src', title: 'Query words the figure uses (in its text or printed inside it)' }, 'words'),
      ` mentions ${terms.slice(0, 6).join(', ')}`);
  }
  if (hit.embedding_score === null || hit.embedding_score === undefined || hit.embedding_score < closeMeaning) return null;
  return h('div', { class: 'snippet why-found' },
    h('span', { class: 'src', title: 'Found by the meaning of its text: none of the query words occurs in it' }, 'meaning'),
    ' close in meaning, no shared words');
}

// A related figure's text at least this close in meaning (MiniLM cosine) is said to be so when
// nothing else explains it; below, the card says nothing rather than something untrue.
const CLOSE_MEANING = 0.5;

// The server's reasons, most telling first: a copy of the picture, then what both figures show
// or print, what both captions name, what both papers are about; a similar picture, the figure
// type (its card says it already), a similar description, a related topic last. Others keep their place
// in the middle; ties keep the server's order.
const REASON_ORDER = [
  ['same picture', 0], ['both plot', 1], ['both show:', 2], ['both show', 1], ['both vary', 1],
  ['looks like', 1], ['may show', 2], ['both captions mention', 3], ['related paper:', 4],
  ['similar picture', 6], ['same kind of figure', 7], ['similar description', 8], ['related paper topic', 9]];

function reasonRank(r) {
  const hit = REASON_ORDER.find(([start]) => r.startsWith(start));
  return hit ? hit[1] : 5;
}

// A card shows this many of its reasons (each shared word counts as one), two on a phone; the
// rest fold behind "+N more".
const SHOWN = 3;
const SHOWN_NARROW = 2;

// "Why" a result, in words: the reasons the server gives, the informative terms shared with the
// figure, or that the texts are close in meaning. Raw scores stay in the API. The most telling
// come first; past SHOWN, the rest fold behind "+N more" (a button beside the card's link: it
// opens them in place). Words a reason names already are not repeated.
// Results found by an uploaded picture (`picture`) have no words to share: only the reasons.
export function whyBlock(hit, { picture = false } = {}) {
  const reasons = [...(hit.reasons || [])].sort((a, b) => reasonRank(a) - reasonRank(b));
  const said = reasons.join(' ').toLowerCase();
  const terms = picture ? [] : (hit.matched_terms || []).filter((t) => !said.includes(t.toLowerCase())).slice(0, 6);
  const close = !picture && !reasons.length && !terms.length && (hit.embedding_score ?? 0) >= CLOSE_MEANING;
  const chips = reasons.map((r) => h('span', { class: 'chip reason' }, r));
  if (picture && !chips.length) chips.push(h('span', { class: 'chip reason' }, 'close in layout and colours'));
  if (close) chips.push(h('span', { class: 'chip reason' }, 'texts close in meaning'));
  const words = terms.map((t) => h('span', { class: 'chip' }, t));
  if (!chips.length && !words.length) return null;
  const wordsRow = words.length
    ? h('span', { class: 'chips terms', title: 'Informative words both figures\' texts use' }, h('span', {}, 'both mention:'), words)
    : null;
  const box = h('div', { class: 'chips reasons' }, chips, wordsRow);
  const all = [...chips, ...words];
  const shown = window.matchMedia('(max-width: 599px)').matches ? SHOWN_NARROW : SHOWN;
  if (all.length > shown) {
    const folded = all.slice(shown);
    const fold = (hide) => {
      folded.forEach((el) => { el.hidden = hide; });
      if (wordsRow) wordsRow.hidden = hide && folded.includes(words[0]);
    };
    fold(true);
    const more = `+${folded.length} more`;
    const btn = h('button', { type: 'button', class: 'chip more-reasons', 'aria-expanded': 'false' }, more);
    btn.addEventListener('click', () => {
      const open = btn.getAttribute('aria-expanded') !== 'true';
      fold(!open);
      btn.setAttribute('aria-expanded', String(open));
      btn.textContent = open ? 'fewer' : more;
    });
    box.append(btn);
  }
  return h('div', { class: 'why' }, box);
}

// Arrow keys move the focus between the links of a grid's cards (Enter opens, as links do).
export function gridKeys(grid) {
  grid.addEventListener('keydown', (e) => {
    if (!['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End'].includes(e.key)) return;
    const cards = [...grid.querySelectorAll(':scope > .card')];
    const i = cards.indexOf(focusedCard());
    if (i < 0) return;
    const cols = Math.max(1, Math.round(grid.clientWidth / cards[0].getBoundingClientRect().width));
    const step = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -cols, ArrowDown: cols }[e.key];
    let j = e.key === 'Home' ? 0 : e.key === 'End' ? cards.length - 1 : i + step;
    j = Math.max(0, Math.min(cards.length - 1, j));
    if (j !== i) { e.preventDefault(); cardLink(cards[j]).focus(); }
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

/** A file's size as people read it: "840 KB", "3.2 MB" (a small figure is not "0.00 MB"). */
export function fileSize(bytes) {
  return bytes < 1024 * 1024 ? `${Math.max(1, Math.round(bytes / 1024))} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
