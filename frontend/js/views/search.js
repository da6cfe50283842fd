// Search page: results for ?q=…, or the most recently added figures when there is no query, both narrowed by
// the filters in the URL (filters.js). "Load more" pages.
import { api, serverInfo } from '../api.js';
import { h, loading, notice, empty, figureCard, cardLink, gridKeys, setTitle, snippetBlock, remember, asSentence } from '../ui.js';
import { filterBar, filterParams, searchHash } from '../filters.js';

const PAGE = 24;
const MAX_QUERY = 500;  // the API's limit on a query's length (the header box's maxlength too)
const NAMED_QUERY = 60;  // the heading and the tab's title name a query by at most this many characters

export async function renderSearch(root, params, { signal, restore }) {
  const q = (params.get('q') || '').trim();
  const filters = filterParams(params);
  const kind = filters.get('kind') || 'figure';
  const what = kind === 'table' ? 'Tables' : kind === 'both' ? 'Figures and tables' : 'Figures';
  // a long query (a pasted abstract) is named by its first words: in full it pushed the results off the first screen
  const named = q.length > NAMED_QUERY ? `${q.slice(0, NAMED_QUERY).replace(/\s+\S*$/, '')}…` : q;
  setTitle(q ? `“${named}”` : '');
  const info = h('span', { class: 'muted small', id: 'result-info' });
  const alsoTables = h('span', { class: 'small', id: 'also-tables', hidden: true });
  const head = h('div', { class: 'bar' }, h('h1', { title: named !== q ? q : null }, q ? `${what} for “${named}”` : `Recently added ${what.toLowerCase()}`), info, alsoTables);
  const grid = h('div', { class: 'grid', id: 'results' });
  const status = h('div', {});
  const moreBtn = h('button', { class: 'btn', type: 'button', id: 'more' }, 'Load more');
  const more = h('div', { class: 'more', hidden: true }, moreBtn);
  const bar = h('div', { id: 'filter-slot' });
  if (q.length > MAX_QUERY) {  // a pasted or linked address: say so instead of the API's parameter error
    root.append(head, notice(`This query is ${q.length} characters long; a search reads at most ${MAX_QUERY}. Shorten it and search again.`, 'warn'));
    return;
  }
  root.append(head, bar, status, grid, more);
  gridKeys(grid);
  const fq = filters.toString() ? `&${filters}` : '';

  let offset = 0;
  let shown = 0;
  let hasMore = false;
  let extraInfo = '';
  let total = null;  // a query's matches, from the facets (the same hit finding, at most 1000)
  function showInfo() {
    if (!q) { info.textContent = extraInfo; return; }
    if (!shown) { info.textContent = 'no results'; return; }  // nothing was ranked: say only that
    const count = total === null ? `${shown}${hasMore ? '+' : ''}`
      : total > shown ? `${shown} of ${total >= 1000 ? '1000+' : total}` : `${shown}`;
    info.textContent = `${count} result${(total ?? shown) === 1 ? '' : 's'} · ${extraInfo}`;
  }
  // fetched beside the results; the page counts as shown once both are in (its height is then
  // final, so a scroll offset given back by Back lands where it was taken)
  const barShown = filterBar(params, { signal, onChange: (f) => { location.hash = searchHash(q, f); } })
    .then(({ form, facets }) => {
      bar.replaceChildren(form);
      const type = filters.get('type');
      total = type ? (facets.types.find((t) => t.type === type)?.count ?? 0) : facets.total;
      if (extraInfo) showInfo();  // else the first page shows it
    })
    .catch((err) => { if (err.name !== 'AbortError') bar.replaceChildren(notice(`Filters unavailable: ${err.message}`, 'warn')); });

  // a query searched among figures alone may be answered by tables (a data set, a measure in their
  // cells): how many match, under the same filters, is said with a link to them
  const tableFilters = new URLSearchParams(filters);
  tableFilters.delete('type');
  tableFilters.set('kind', 'table');
  const tablesHash = searchHash(q, tableFilters);
  const tableCount = q && kind === 'figure'
    ? api(`search/facets?${tableFilters}&q=${encodeURIComponent(q)}`, { signal })
      .then((r) => r.total).catch((err) => { if (err.name === 'AbortError') throw err; return 0; })
    : Promise.resolve(0);
  const tablesShown = tableCount.then((n) => {
    if (!n) return;
    alsoTables.replaceChildren(h('a', { href: tablesHash }, `${n >= 1000 ? '1000+' : n} matching table${n === 1 ? '' : 's'}`));
    alsoTables.hidden = false;
  }).catch((err) => { if (err.name !== 'AbortError') throw err; });  // left for another page: nothing to say

  // a paper with more matches than the per-paper limit let in: the same search within that paper
  function moreFromPaper(f) {
    if (!f.more_from_paper || filters.get('paper_id')) return null;
    const within = new URLSearchParams(filters);
    within.set('paper_id', String(f.paper_id));
    return h('a', { class: 'more-from-paper', href: searchHash(q, within),
      title: 'More figures of this paper match; the search shows a few of each paper before the rest' },
    'More from this paper');
  }

  async function page({ refocus = true } = {}) {
    moreBtn.disabled = true;
    status.replaceChildren(loading(q ? 'Searching…' : 'Loading…'));
    let items; let message = null; let indexed = true; let unread = false;
    if (q) {
      const r = await api(`search?q=${encodeURIComponent(q)}&k=${PAGE}&offset=${offset}${fq}`, { signal });
      items = r.items; hasMore = r.has_more; message = r.message;
      unread = r.no_word_read === true;  // the query had no word the search reads: nothing was searched
      indexed = Boolean(r.index_version);  // without an index nothing was searched: no "no matches"
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
    // the cut-off above which a card may say "close in meaning" is the server's (cached after the
    // first page); without it no card claims closeness
    const closeMeaning = (await serverInfo().catch(() => null))?.ranking?.thresholds?.dense_match_min ?? Infinity;
    // the first results wait for the filter box above them: shown before it, they jumped down
    // under the reader's finger when it came
    if (!shown) await barShown;
    status.replaceChildren();
    const firstNew = grid.children.length;
    for (const f of items) {
      const extra = [snippetBlock(f, closeMeaning), moreFromPaper(f)].filter(Boolean);
      grid.append(figureCard(f, { extra: extra.length ? extra : null }));
    }
    shown += items.length;
    remember({ results: shown });  // Back to this page loads as many again
    showInfo();
    if (!shown) {
      if (q && !indexed) status.append(empty('Search is not ready yet.', asSentence(message || 'the server has no search index')));
      else if (q) {
        const nTables = await tableCount;
        // a query of common words alone was not searched at all: the server's message says what to
        // do, and no other words, tables or filters would change it
        status.append(empty(unread ? 'Nothing to search for.' : 'No close matches.', h('span', { id: 'no-match-advice' }, asSentence(message || 'no figure shares these words or is close in meaning'), ' ',
          unread ? null
            : nTables ? h('a', { href: tablesHash, id: 'search-tables' }, `Show the ${nTables === 1 ? 'matching table' : `${nTables >= 1000 ? '1000+' : nTables} matching tables`}`)
              : fq ? h('a', { href: searchHash(q, []), id: 'search-unfiltered' }, 'Search without the filters') : 'Try other or fewer words.')));
      } else if (fq) status.append(empty('Nothing passes these filters.', h('a', { href: '#/' }, 'Clear the filters')));
      else status.append(empty('The collection is empty.', h('span', {}, 'An administrator can add papers on the ', h('a', { href: '#/admin' }, 'Admin page'), '.')));
    } else if (message && firstNew === 0) {
      status.append(notice(asSentence(message)));
    }
    more.hidden = !hasMore;
    moreBtn.disabled = false;
    if (refocus && firstNew > 0 && grid.children[firstNew]) cardLink(grid.children[firstNew]).focus({ preventScroll: true });
  }

  moreBtn.addEventListener('click', () => page().catch(showError));
  function showError(err) {
    if (err.name === 'AbortError') return;
    status.replaceChildren(notice(err.message, 'error'));
    moreBtn.disabled = false;
  }
  await page();
  // back on this page after "Load more": the same results again, so the reader's place is still there
  while (hasMore && shown < (restore.results || 0)) await page({ refocus: false });
  await Promise.all([barShown, tablesShown]);
}
