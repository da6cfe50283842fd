// Search page: results for ?q=…, or the latest figures when there is no query. "Load more" pages.
import { api } from '../api.js';
import { h, loading, notice, empty, figureCard, gridKeys, setTitle, snippetBlock } from '../ui.js';

const PAGE = 24;

export async function renderSearch(root, params, { signal }) {
  const q = (params.get('q') || '').trim();
  setTitle(q ? `“${q}”` : '');
  const head = h('div', { class: 'bar' }, h('h1', {}, q ? `Figures for “${q}”` : 'Latest figures'), h('span', { class: 'muted small', id: 'result-info' }));
  const grid = h('div', { class: 'grid', id: 'results' });
  const status = h('div', {});
  const moreBtn = h('button', { class: 'btn', type: 'button', id: 'more' }, 'Load more');
  const more = h('div', { class: 'more', hidden: true }, moreBtn);
  root.append(head, status, grid, more);
  gridKeys(grid);

  let offset = 0;
  let shown = 0;

  async function page() {
    moreBtn.disabled = true;
    status.replaceChildren(loading(q ? 'Searching…' : 'Loading…'));
    let items; let hasMore; let message = null; let extraInfo = '';
    if (q) {
      const r = await api(`search?q=${encodeURIComponent(q)}&k=${PAGE}&offset=${offset}`, { signal });
      items = r.items; hasMore = r.has_more; message = r.message;
      extraInfo = r.reranked ? 'ranked by keywords and meaning' : 'ranked by keywords';
      offset += PAGE;
    } else {
      const r = await api(`figures?limit=${PAGE}&offset=${offset}`, { signal });
      items = r.items; hasMore = offset + r.items.length < r.total;
      extraInfo = `${r.total} figure${r.total === 1 ? '' : 's'} in the collection`;
      offset += r.items.length;
    }
    status.replaceChildren();
    const firstNew = grid.children.length;
    for (const f of items) grid.append(figureCard(f, { extra: snippetBlock(f) }));
    shown += items.length;
    document.getElementById('result-info').textContent = q ? `${shown}${hasMore ? '+' : ''} result${shown === 1 ? '' : 's'} · ${extraInfo}` : extraInfo;
    if (!shown) {
      if (q) status.append(empty('No close matches.', message || 'No figure shares these words or is close in meaning. Try other or fewer words.'));
      else status.append(empty('The collection is empty.', h('span', {}, 'An administrator can add papers on the ', h('a', { href: '#/admin' }, 'Admin page'), '.')));
    } else if (message && !items.length) {
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
