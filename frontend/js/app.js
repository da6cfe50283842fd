// Hash router: #/ (search or browse), #/figure/ID, #/paper/ID, #/papers, #/upload, #/admin.
import { h, notice, clear, remember, asSentence, cardLink, doneTyping, setTitle } from './ui.js';
import { renderSearch } from './views/search.js';
import { renderFigure } from './views/figure.js';
import { renderPaper, renderPapers } from './views/paper.js';
import { renderUpload } from './views/upload.js';
import { renderAdmin } from './views/admin.js';
import { filterParams, searchHash } from './filters.js';

const view = document.getElementById('view');
const qInput = document.getElementById('q');
let current = null; // AbortController of the view on screen
let arrived = null; // history.state of the entry being shown, read before its page is rendered again

// Where the reader was on each page (scroll offset, results loaded) lives in that history entry's
// state, so Back and Forward return to the same place instead of the top of a shorter page.
history.scrollRestoration = 'manual';

const routes = [
  [/^\/?$/, 'search', (m, p) => renderSearch(view, p, ctx())],
  [/^\/figure\/(\d+)$/, 'search', (m) => renderFigure(view, Number(m[1]), ctx())],
  [/^\/paper\/(\d+)$/, 'papers', (m, p) => renderPaper(view, Number(m[1]), p, ctx())],
  [/^\/papers$/, 'papers', (m, p) => renderPapers(view, p, ctx())],
  [/^\/upload$/, 'upload', () => renderUpload(view, ctx())],
  [/^\/admin$/, 'admin', () => renderAdmin(view, ctx())],
];

// `fromSite`: the entry before this one is a page of this site (history.back() stays here); not
// so for the first page of a tab or one opened from another site or a bookmark.
function ctx() { return { signal: current.signal, restore: arrived || {}, fromSite: Boolean(history.state && history.state.fromSite) }; }

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, query = ''] = raw.split('?');
  return { path, params: new URLSearchParams(query) };
}

async function route(e) {
  if (current) current.abort();
  const mine = new AbortController();
  current = mine;
  arrived = history.state;
  // an entry says once, when first shown, whether it was reached from a page of this site: a
  // hashchange (e) only happens within this document; a load (no e) may come from anywhere.
  // Back, Forward and reloads keep what the entry said.
  if (!arrived || !('fromSite' in arrived)) remember({ fromSite: Boolean(e) });
  const focusLost = () => e && (!document.activeElement || document.activeElement === document.body);
  const { path, params } = parseHash();
  const found = routes.find(([re]) => re.test(path));
  // the header box shows the query of the search page only (never an old one elsewhere)
  qInput.value = path === '/' || path === '' ? params.get('q') || '' : '';
  document.querySelectorAll('[data-nav]').forEach((a) => {
    if (found && a.dataset.nav === found[1]) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  });
  // aria-busy while a page loads; data-hash names the address the finished page shows
  view.setAttribute('aria-busy', 'true');
  delete view.dataset.hash;
  clear(view);
  if (!found) {
    setTitle('No such page');  // not the title of the page before
    view.append(notice('There is no such page.', 'warn'), h('p', {}, h('a', { href: '#/' }, 'Go to the figures')));
    done(mine);
    return;
  }
  try {
    await found[2](path.match(found[0]), params);
  } catch (err) {
    // a page left before it finished must not touch the page shown since
    if (mine.signal.aborted || (err && err.name === 'AbortError')) return;
    clear(view);
    // a figure or paper that is not there (an old link, a paper removed since): say what may have happened
    const missing = err && err.status === 404 ? path.match(/^\/(figure|paper)\//) : null;
    // the tab and the history say what the page shows now, not what the page before showed
    setTitle(missing ? `${missing[1] === 'figure' ? 'Figure' : 'Paper'} not found` : 'Something went wrong');
    const gone = missing
      ? ` It may have been removed from the collection since the link was made, or the address is mistyped; search for it by its ${missing[1] === 'figure' ? 'caption' : 'title'}.`
      : '';
    view.append(notice(asSentence(err && err.message ? err.message : 'something went wrong') + gone, 'error'),
      h('p', {}, h('a', { href: '#/' }, 'Go to the figures'), gone ? [' · ', h('a', { href: '#/papers' }, 'Browse the papers')] : null));
  }
  if (!mine.signal.aborted) {
    if (arrived && arrived.scrollY) window.scrollTo(0, arrived.scrollY);
    else if (!params.get('q')) window.scrollTo(0, 0);
    // back on a page: the card that was followed has the focus again; else, when the followed link is
    // gone, the next Tab starts in the new page, not at the top
    const card = arrived && arrived.focusCard ? view.querySelector(`.card[data-figure-id="${CSS.escape(arrived.focusCard)}"]`) : null;
    if (card) cardLink(card).focus({ preventScroll: true });
    else if (focusLost()) view.focus({ preventScroll: true });
  }
  done(mine);
}

// a page being rendered scrolls as it grows and shrinks: only a finished page's offset is kept
function keepScroll() { if (view.getAttribute('aria-busy') === 'false') remember({ scrollY: Math.round(window.scrollY) }); }
let scrollTimer = 0;
window.addEventListener('scroll', () => { clearTimeout(scrollTimer); scrollTimer = setTimeout(keepScroll, 150); }, { passive: true });
// before a followed link makes a new entry: the offset, and which card was followed
document.addEventListener('click', (e) => {
  if (view.getAttribute('aria-busy') !== 'false') return;
  const card = e.target instanceof Element ? e.target.closest('.card[data-figure-id]') : null;
  remember({ scrollY: Math.round(window.scrollY), focusCard: card ? card.dataset.figureId : null });
}, true);

function done(mine) {
  if (mine.signal.aborted) return;
  view.setAttribute('aria-busy', 'false');
  view.dataset.hash = location.hash;
}

document.getElementById('search-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const q = qInput.value.trim();
  const { path, params } = parseHash();
  // a new query on the search page keeps its filters; from any other page it starts afresh
  location.hash = searchHash(q, path === '/' || path === '' ? filterParams(params) : []);
  doneTyping(qInput);
});

// "/" focuses the search box (unless typing somewhere); Escape leaves it.
document.addEventListener('keydown', (e) => {
  const t = e.target;
  const typing = t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t.isContentEditable;
  if (e.key === '/' && !typing && !e.ctrlKey && !e.metaKey) { e.preventDefault(); qInput.focus(); qInput.select(); }
  else if (e.key === 'Escape' && t === qInput) qInput.blur();
});

// "Skip to content" moves the focus; following its #view address would leave the page.
document.querySelector('.skip').addEventListener('click', (e) => { e.preventDefault(); view.focus(); });

window.addEventListener('hashchange', route);
route();
