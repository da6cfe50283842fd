// Search page: results for ?q=…, or the most recently added figures when there is no query, both narrowed by
// the filters in the URL (filters.js). "Load more" pages.
import { api } from '../api.js';
import { h, loading, notice, empty, figureCard, gridKeys, setTitle, snippetBlock } from '../ui.js';
import { filterBar, filterParams, searchHash } from '../filters.js';

const PAGE = 24;

export async function renderSearch(root, params, { signal }) {
  const q = (params.get('q') || '').trim();
  const filters = filterParams(params);
  const kind = filters.get('kind') || 'figure';
  const what = kind === 'table' ? 'Tables' : kind === 'both' ? 'Figures and tables' : 'Figures';
  setTitle(q ? `“${q}”` : '');
  const info = h('span', { class: 'muted small', id: 'result-info' });
  const head = h('div', { class: 'bar' }, h('h1', {}, q ? `${what} for “${q}”` : `Recently added ${what.toLowerCase()}`), info);
  const grid = h('div', { class: 'grid', id: 'results' });
  const status = h('div', {});
  const moreBtn = h('button', { class: 'btn', type: 'button', id: 'more' }, 'Load more');
  const more = h('div', { class: 'more', hidden: true }, moreBtn);
  const bar = h('div', { id: 'filter-slot' });
  root.append(head, bar, status, grid, more);
  gridKeys(grid);
  filterBar(params, { signal, onChange: (f) => { location.hash = searchHash(q, f); } })
    .then((form) => bar.replaceChildren(form))
    .catch((err) => { if (err.name !== 'AbortError') bar.replaceChildren(notice(`Filters unavailable: ${err.message}`, 'warn')); });
  const fq = filters.toString() ? `&${filters}` : '';

  let offset = 0;
  let shown = 0;

  async function page() {
    moreBtn.disabled = true;
    status.replaceChildren(loading(q ? 'Searching…' : 'Loading…'));
    let items; let hasMore; let message = null; let extraInfo = '';
    if (q) {
      const r = await api(`search?q=${encodeURIComponent(q)}&k=${PAGE}&offset=${offset}${fq}`, { signal });
      items = r.items; hasMore = r.has_more; message = r.message;
      extraInfo = r.reranked ? 'ranked by keywords and meaning' : 'ranked by keywords';
      offset += PAGE;
    } else {
      const r = await api(`figures?limit=${PAGE}&offset=${offset}${fq}`, { signal });
      items = r.items; hasMore = offset + r.items.length < r.total;
      const noun = kind === 'table' ? 'table' : kind === 'both' ? 'figure or table' : 'figure';
      extraInfo = `${r.total} ${noun}${r.total === 1 ? '' : 's'}${fq ? ' pass the filters' : ' in the collection'}`;
      if (r.total === 1 && fq) extraInfo = extraInfo.replace(' pass ', ' passes ');
      offset += r.items.length;
    }
    status.replaceChildren();
    const firstNew = grid.children.length;
    for (const f of items) grid.append(figureCard(f, { extra: snippetBlock(f) }));
    shown += items.length;
    info.textContent = q ? `${shown}${hasMore ? '+' : ''} result${shown === 1 ? '' : 's'} · ${extraInfo}` : extraInfo;
    if (!shown) {
      if (q) status.append(empty('No close matches.', message || 'No figure shares these words or is close in meaning. Try other or fewer words.'));
      else if (fq) status.append(empty('Nothing passes these filters.', h('a', { href: '#/' }, 'Clear the filters')));
      else status.append(empty('The collection is empty.', h('span', {}, 'An administrator can add papers on the ', h('a', { href: '#/admin' }, 'Admin page'), '.')));
    } else if (message && firstNew === 0) {
      status.append(notice(message));
    }
    more.hidden = !hasMore;
    moreBtn.disabled = false;
    if (firstNew > 0 && grid.children[firstNew]) grid.children[firstNew].focus({ preventScroll: true });
  }

  moreBtn.addEventListener('click', () => page().catch(showError));
  function showError(err) {
    if (err.name === 'AbortError') return;
    status.replaceChildren(notice(err.message, 'error'));
    moreBtn.disabled = false;
  }
  await page();
}
