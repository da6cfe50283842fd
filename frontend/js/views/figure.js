// Figure page: the large figure, caption, where it is in the PDF, how to cite it, mentions, its
// paper, and similar figures with a "why".
import { api } from '../api.js';
import { h, loading, empty, notice, figureCard, whyBlock, gridKeys, setTitle, captionBody, asSentence, foldText } from '../ui.js';

// Copy text to the clipboard; where the Clipboard API is missing (http on another host), a
// selected textarea and execCommand do it. Resolves true when copied.
async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const ta = h('textarea', { class: 'offscreen', readonly: true });
    ta.value = text;
    document.body.append(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch { ok = false; }
    ta.remove();
    return ok;
  }
}

function copyButton(id, label, text) {
  const btn = h('button', { type: 'button', class: 'btn', id }, label);
  btn.addEventListener('click', async () => {
    const ok = await copyText(text);
    btn.textContent = ok ? 'Copied ✓' : 'Select and copy it below';
    setTimeout(() => { btn.textContent = label; }, 1800);
  });
  return btn;
}

function citeBlock(f) {
  if (!f.citation) return null;
  return h('div', { class: 'panel', id: 'cite' },
    h('h3', {}, 'Cite this figure'),
    h('p', { class: 'cite', id: 'citation' }, f.citation),
    h('div', { class: 'actions' }, copyButton('copy-citation', 'Copy citation', f.citation),
      f.bibtex ? copyButton('copy-bibtex', 'Copy BibTeX', f.bibtex) : null),
    f.bibtex ? h('details', {}, h('summary', { class: 'small muted' }, 'BibTeX'), h('pre', { class: 'bibtex', id: 'bibtex' }, f.bibtex)) : null);
}

// Where the figure page is one column (style.css: .figure-layout).
const NARROW = '(max-width: 959px)';

export async function renderFigure(root, id, { signal, fromSite }) {
  root.append(loading());
  const f = await api(`figures/${id}`, { signal });
  setTitle(`${f.label} · ${f.paper.title}`);
  root.replaceChildren();

  // Back returns to the page of this site the reader came from; a page opened directly (a new
  // tab, a bookmark, a link from elsewhere) has none, and goes to the figures instead of leaving
  const back = fromSite
    ? h('a', { href: '#/', id: 'back', onclick: (e) => { e.preventDefault(); history.back(); } }, '← Back')
    : h('a', { href: '#/', id: 'back' }, '← All figures');
  const central = f.central_rank === 1 ? h('span', { class: 'badge central', title: 'The central figure of its paper' }, '★ central figure') : null;
  // a caption read by OCR may hold misread words: the page says so, as the figure's card does
  const scanned = f.text_source === 'ocr'
    ? h('span', { class: 'badge scanned', id: 'figure-scanned', title: 'From a scanned page: the caption and mentions were read by OCR and may hold misread words' }, 'scanned · OCR')
    : null;

  const img = h('img', { src: f.image_url, alt: `${f.label}: ${captionBody(f).slice(0, 200)}`, id: 'figure-image' });
  img.addEventListener('error', () => img.replaceWith(empty('The image file is missing.', '')), { once: true });
  const big = f.hires_url ? `${f.hires_url}?scale=4` : f.image_url;
  const main = h('a', { class: 'figure-main', href: big, target: '_blank', rel: 'noopener', title: f.hires_url ? 'Open at high resolution' : 'Open the full-size image' }, img);

  const mentions = f.mentions.length
    ? h('ul', { class: 'mentions' }, f.mentions.map((m) => h('li', {},
        m.before ? h('span', { class: 'ctx' }, m.before + ' ') : null, m.sentence, m.after ? h('span', { class: 'ctx' }, ' ' + m.after) : null)))
    : h('p', { class: 'muted' }, 'The text of the paper does not refer to this figure.');

  // a long caption on a phone shows its first lines and a button for the rest (wider screens
  // scroll it in its box), so that the related figures are not two screens down
  const caption = captionBody(f)
    ? h('p', { class: 'caption', id: 'figure-caption', tabindex: '0' }, captionBody(f))
    : h('p', { class: 'caption muted', id: 'figure-caption' }, `No caption was found for this ${f.kind}.`);
  const captionFold = foldText(caption, { id: 'caption-toggle', what: 'caption', media: NARROW });

  const side = h('div', { class: 'figure-side' },
    h('div', { class: 'panel' },
      h('h1', {}, f.label || `Figure ${f.number}`, ' ', central, central && scanned ? ' ' : null, scanned),
      caption, captionFold.button,
      h('div', { class: 'meta' },
        h('span', {}, `page ${f.page}`),
        f.figure_type && f.kind !== 'table' ? h('span', { id: 'figure-type' }, f.figure_type.replace(/_/g, ' ')) : null,
        f.width && f.height ? h('span', {}, `${f.width}×${f.height} px`) : null),
      h('div', { class: 'actions' },
        f.pdf_url
          ? h('a', { class: 'btn btn-primary', id: 'open-pdf', href: f.pdf_url, target: '_blank', rel: 'noopener' }, `Open in PDF at page ${f.page} ↗`)
          : h('span', { class: 'muted small', id: 'no-pdf' }, 'The PDF of this paper was not kept.'),
        f.hires_url ? h('a', { class: 'btn', id: 'hires', href: `${f.hires_url}?scale=4`, target: '_blank', rel: 'noopener', title: 'Rendered from the PDF at 288 dpi' }, 'High resolution ↗') : null,
        h('a', { class: 'btn', href: f.image_url, target: '_blank', rel: 'noopener', title: 'The crop as stored at ingestion' }, 'Full-size image ↗')),
      h('p', { class: 'from-paper' }, h('span', { class: 'muted small' }, 'From '), h('a', { href: `#/paper/${f.paper.paper_id}`, id: 'paper-link' }, f.paper.title), f.paper.year ? h('span', { class: 'muted' }, ` (${f.paper.year})`) : null),
      f.paper_authors ? h('p', { class: 'muted small' }, f.paper_authors) : null));

  const things = f.kind === 'table' ? 'tables' : 'figures';  // a table's related items are tables
  const simHead = h('h2', { id: 'similar-title' }, `Related ${things} in other papers`);
  const simStatus = h('div', {}, loading(`Finding related ${things}…`));
  const simGrid = h('div', { class: 'grid even', id: 'similar' });
  const sameHead = h('h2', { id: 'same-paper-title' }, 'More from this paper');
  const sameStatus = h('div', {});
  const sameGrid = h('div', { class: 'grid even', id: 'same-paper' });
  const linkedHead = h('h2', { id: 'linked-title', hidden: true }, `More ${things} from papers that cite or are cited by this paper`);
  const linkedGrid = h('div', { class: 'grid even', id: 'linked-papers' });
  gridKeys(simGrid);
  gridKeys(sameGrid);
  gridKeys(linkedGrid);

  // what is read after looking at the related figures: mentions on the left, panels and citation on the right
  const details = h('div', { class: 'figure-details' },
    h('div', {}, h('div', { class: 'panel', id: 'mentions' }, h('h3', {}, `Mentioned in the text (${f.mentions.length})`), mentions)),
    h('div', {}, panelsBlock(f), citeBlock(f)));

  root.append(h('div', { class: 'crumbs' }, back),
    h('div', { class: 'figure-layout' }, main, side),
    simHead, simStatus, simGrid, details, sameHead, sameStatus, sameGrid, linkedHead, linkedGrid);
  captionFold.check();

  // a related list that fails says so in its place; the figure and the other lists stay
  const settle = (pending) => pending.catch((err) => { if (err.name === 'AbortError') throw err; return { items: [], error: err }; });
  const [sim, same, linked] = await Promise.all([
    settle(api(`figures/${id}/similar?k=12&scope=other_papers`, { signal })),
    settle(api(`figures/${id}/similar?k=12&scope=same_paper`, { signal })),
    settle(api(`figures/${id}/similar?k=18&scope=linked_papers`, { signal }))]);
  simStatus.replaceChildren();
  if (sim.error) {
    simStatus.append(notice(asSentence(`related ${things} cannot be shown now: ${sim.error.message}`), 'warn'));
  } else if (!sim.items.length) {
    simStatus.append(empty(`No related ${things} in other papers.`, sim.message || `Nothing in the collection is related to this ${f.kind} yet.`));
  } else {
    for (const hit of sim.items) simGrid.append(figureCard(hit, { extra: whyBlock(hit) }));
  }
  if (same.error) {
    sameStatus.append(notice(asSentence(`the paper's other ${things} cannot be shown now: ${same.error.message}`), 'warn'));
  } else if (!same.items.length) {
    sameHead.hidden = true;
  } else {
    for (const hit of same.items) sameGrid.append(figureCard(hit, { extra: whyBlock(hit), showPaper: false }));
  }
  // citation links choose these papers (the ranking inside is the usual one); what the related
  // list above shows already is not repeated
  const shown = new Set(sim.items.map((x) => x.figure_id));
  const more = linked.items.filter((x) => !shown.has(x.figure_id)).slice(0, 6);
  if (more.length) {
    linkedHead.hidden = false;
    for (const hit of more) linkedGrid.append(figureCard(hit, { extra: whyBlock(hit) }));
  }
}

// The labelled panels of a compound figure, each cut out with its part of the caption.
function panelsBlock(f) {
  if (!f.panels || !f.panels.length) return null;
  return h('div', { class: 'panel', id: 'panels' },
    h('h3', {}, `Panels (${f.panels.length})`),
    h('div', { class: 'panel-strip' }, f.panels.map((p) => h('a', {
      class: 'panel-item', href: p.image_url, target: '_blank', rel: 'noopener', id: `panel-${p.label}`,
      title: `Open panel (${p.label})`,
    }, h('img', { src: p.image_url, alt: `Panel (${p.label}) of ${f.label}`, loading: 'lazy' }),
    h('span', { class: 'small' }, h('b', {}, `(${p.label}) `), p.caption_part || '')))));
}
