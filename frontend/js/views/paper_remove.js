// The paper page's "Remove paper" control, shown to a signed-in admin (the token of the Admin
// page's sign-in, kept in this tab): it asks in the page, naming what goes, before removing.
import { api, adminToken } from '../api.js';
import { h, notice } from '../ui.js';

export function removeControl(p, nFigures, nTables, signal) {
  const token = adminToken();
  if (!token) return null;
  const box = h('div', { class: 'remove-paper', id: 'remove-paper' });
  const outside = p.status !== 'ok';  // a failed file, one without a text layer or a duplicate: not in the collection
  const open = h('button', { class: 'btn btn-danger', type: 'button', id: 'remove-paper-open' }, outside ? 'Remove this record…' : 'Remove paper…');
  const count = (n, w) => `${n} ${w}${n === 1 ? '' : 's'}`;
  open.addEventListener('click', () => {
    open.disabled = true;
    const yes = h('button', { class: 'btn btn-danger', type: 'button', id: 'remove-paper-confirm' }, 'Remove it');
    const no = h('button', { class: 'btn', type: 'button', id: 'remove-paper-cancel' }, 'Cancel');
    const msg = h('div', {});
    const ask = h('div', { class: 'confirm', role: 'alertdialog', 'aria-label': 'Confirm removal' },
      h('p', {}, outside
        ? `Remove the record of “${p.title}” (${p.status.replace('_', ' ')}, not in the collection)? This cannot be undone.`
        : `Remove “${p.title}” with its ${count(nFigures, 'figure')} and ${count(nTables, 'table')} from the collection? This cannot be undone.`),
      h('div', { class: 'row' }, yes, no), msg);
    no.addEventListener('click', () => { ask.remove(); open.disabled = false; open.focus(); });
    yes.addEventListener('click', async () => {
      yes.disabled = true; no.disabled = true;
      try {
        const r = await api(`admin/papers/${p.paper_id}`, { method: 'DELETE', token, signal });
        box.replaceChildren(notice(r.index_refresh === false
          ? `Removed the record of “${p.title}”; the search index is unchanged.`
          : `Removed “${p.title}” with its ${count(nFigures, 'figure')} and ${count(nTables, 'table')}; the search index is being refreshed.`, 'ok'),
          h('a', { href: '#/papers' }, '← All papers'));
        // the figures and links below are gone with the paper: only its heading and the notice stay
        const view = box.closest('.view');
        if (view) [...view.children].forEach((c) => { if (!c.contains(box)) c.remove(); });
        document.getElementById('paper-pdf')?.remove();
      } catch (err) {
        if (err.name === 'AbortError') return;
        msg.replaceChildren(notice(err.status === 401 || err.status === 403 ? 'Your admin sign-in is no longer valid; sign in again on the Admin page.' : err.message, 'error'));
        yes.disabled = false; no.disabled = false;
      }
    });
    box.append(ask);
    yes.focus();
  });
  box.append(open);
  return box;
}

