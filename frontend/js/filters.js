// Search and browse filters (kind, year range, paper, figure type), kept in the URL's hash query
// so they survive a reload and can be shared: #/?q=…&kind=both&year_from=2018&type=heatmap.
import { api } from './api.js';
import { h } from './ui.js';

export const FILTER_KEYS = ['kind', 'year_from', 'year_to', 'paper_id', 'type'];
const KINDS = [['figure', 'Figures'], ['table', 'Tables'], ['both', 'Both']];

export function filterParams(params) {
  const out = new URLSearchParams();
  for (const key of FILTER_KEYS) {
    const v = (params.get(key) || '').trim();
    if (v && !(key === 'kind' && v === 'figure')) out.set(key, v);
  }
  // a reversed range in an address (typed, or shared from elsewhere) means the same years, as the
  // year boxes take it; left as it was, it matched nothing and said only that nothing passes the filters
  const [from, to] = [Number(out.get('year_from')), Number(out.get('year_to'))];
  if (out.get('year_from') && out.get('year_to') && from > to) {
    out.set('year_from', String(to));
    out.set('year_to', String(from));
  }
  return out;
}

export function typeName(t) { return (t || '').replace(/_/g, ' '); }

// The hash for the search page with `q` and these filters.
export function searchHash(q, filters) {
  const p = new URLSearchParams();
  if (q) p.set('q', q);
  for (const [k, v] of filters) p.set(k, v);
  const s = p.toString();
  return s ? `#/?${s}` : '#/';
}

const PAPER_PAGE = 100;  // the API's largest page
const MAX_PAPER_OPTIONS = 1000;  // past this many papers a list to pick from is no help anyway

// The papers the filter offers, by title: every page of them (up to MAX_PAPER_OPTIONS), fetched once.
let papersPromise = null;
function paperOptions() {
  if (!papersPromise) {
    const page = (offset) => api(`papers?limit=${PAPER_PAGE}&offset=${offset}&sort=title`);
    papersPromise = page(0).then(async (first) => {
      const offsets = [];
      for (let o = PAPER_PAGE; o < Math.min(first.total, MAX_PAPER_OPTIONS); o += PAPER_PAGE) offsets.push(o);
      const rest = await Promise.all(offsets.map(page));
      return { total: first.total, items: first.items.concat(...rest.map((r) => r.items)) };
    }).catch((e) => { papersPromise = null; throw e; });
  }
  return papersPromise;
}

// The filter bar and the facets it shows ({ form, facets }); onChange(URLSearchParams of the
// filters) when the user changes one.
export async function filterBar(params, { signal, onChange }) {
  const current = filterParams(params);
  const without = new URLSearchParams(current);
  without.delete('type');
  if (params.get('q')) without.set('q', params.get('q'));  // counts among the query's matches
  const [facets, papers] = await Promise.all([api(`search/facets?${without}`, { signal }), paperOptions()]);

  const kind = h('select', { id: 'f-kind', 'aria-label': 'Figures or tables' },
    KINDS.map(([v, label]) => h('option', { value: v, selected: (current.get('kind') || 'figure') === v }, label)));
  const year = (id, key, label) => h('input', {
    type: 'number', id, inputmode: 'numeric', placeholder: label, 'aria-label': label,
    min: facets.year_min ?? null, max: facets.year_max ?? null, value: current.get(key) || null });
  const yFrom = year('f-year-from', 'year_from', facets.year_min ? `from ${facets.year_min}` : 'from year');
  const yTo = year('f-year-to', 'year_to', facets.year_max ? `to ${facets.year_max}` : 'to year');
  const chosen = current.get('paper_id');
  const paper = h('select', { id: 'f-paper', 'aria-label': 'Paper' },
    h('option', { value: '' }, 'All papers'),
    papers.items.map((p) => h('option', { value: String(p.paper_id), selected: chosen === String(p.paper_id) },
      (p.title.length > 60 ? `${p.title.slice(0, 58)}…` : p.title) + (p.year ? ` (${p.year})` : ''))),
    // a paper the list does not hold (past its end) still shows as the one filtered on
    chosen && !papers.items.some((p) => String(p.paper_id) === chosen) ? h('option', { value: chosen, selected: true }, `Paper ${chosen}`) : null);

  function collect(type = current.get('type')) {
    const out = new URLSearchParams();
    if (kind.value !== 'figure') out.set('kind', kind.value);
    let [from, to] = [yFrom.value, yTo.value];
    if (from && to && Number(from) > Number(to)) [from, to] = [to, from];  // a reversed range means the same years
    if (from) out.set('year_from', from);
    if (to) out.set('year_to', to);
    if (paper.value) out.set('paper_id', paper.value);
    if (type && kind.value !== 'table') out.set('type', type);  // tables have no figure type: a hidden chip must not filter them
    return out;
  }
  for (const el of [kind, paper]) el.addEventListener('change', () => onChange(collect()));
  for (const el of [yFrom, yTo]) el.addEventListener('change', () => onChange(collect()));

  // tables have no figure types: among tables alone the one chip, "table", only repeated the count
  const types = (current.get('kind') || 'figure') === 'table' ? [] : facets.types;
  const chips = types.length
    ? h('div', { class: 'chips facets', id: 'type-facets', role: 'group', 'aria-label': 'Figure type' },
        types.map((t) => {
          const on = current.get('type') === t.type;
          return h('button', { type: 'button', class: `chip facet${on ? ' on' : ''}`, 'aria-pressed': on ? 'true' : 'false',
            dataset: { type: t.type }, onclick: () => onChange(collect(on ? null : t.type)) },
          typeName(t.type), h('span', { class: 'count' }, String(t.count)));
        }))
    : null;
  const active = [...current.keys()].length;
  const reset = active ? h('a', { href: searchHash(params.get('q') || '', []), id: 'f-reset', class: 'small' }, 'Clear filters') : null;
  // on a phone the fields fold behind a "Filters" button (open while one of them is set) and the
  // type chips scroll sideways in one line, so that the results start on the first screen
  // (style.css); wider screens show everything and no button
  const set = ['kind', 'year_from', 'year_to', 'paper_id'].filter((k) => current.get(k)).length;
  const fields = h('div', { class: 'filter-row', id: 'filter-fields' },
    h('label', { class: 'f' }, h('span', {}, 'Show'), kind),
    h('label', { class: 'f years' }, h('span', {}, 'Years'), yFrom, h('span', { class: 'dash' }, '–'), yTo),
    h('label', { class: 'f paper' }, h('span', {}, 'Paper'), paper),
    reset);
  const toggle = h('button', { type: 'button', class: 'chip filters-toggle', id: 'filters-toggle', 'aria-controls': 'filter-fields', 'aria-expanded': String(set > 0) },
    set ? `Filters (${set})` : 'Filters');
  const form = h('form', { class: `filters foldable${set ? ' open' : ''}`, id: 'filters', role: 'search', 'aria-label': 'Filters', onsubmit: (e) => { e.preventDefault(); onChange(collect()); } },
    fields, h('div', { class: 'facet-line' }, toggle, chips));
  toggle.addEventListener('click', () => {
    toggle.setAttribute('aria-expanded', String(form.classList.toggle('open')));
  });
  return { form, facets };
}
