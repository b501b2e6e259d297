// The Adventure Map: an adventure's turns as a tree, turn N of every branch on row N, each run of turns in
// its own column, the current story's text down the right. Beside it the same tree as a nested list (the
// text alternative). Every action and reply goes in as text, never as markup.
import { el, linkButton, liveStatus, svg } from '../dom';
import { MapHostMessage, type MapEdge, type MapNode, type MapState, type MapWebviewMessage } from './protocol';

interface VsCodeApi {
  postMessage(message: MapWebviewMessage): void;
  setState(state: MapState): void;
}
declare function acquireVsCodeApi(): VsCodeApi;
const vscode = acquireVsCodeApi();

const COLUMN = 32;
const ROW = 34;
const MARGIN = 18;
const RADIUS = 7;
const LABEL_CHARS = 64;

let nodes: MapNode[] = [];
let byId = new Map<string, MapNode>();
let generating = false;
/** The turn shown in the details line: the last one hovered or focused, the head at first. */
let selected: string | undefined;
/** The turn last opened in the play panel from here: marked until another is, so the writer sees which one the panel shows. */
let opened: string | undefined;
/** The details line shows the opened turn once the story has moved to it, not the head it moved to. */
let detailOpened = false;
let lastHead: string | undefined;

const cut = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1).replace(/\s+\S*$/, '')}…` : text);
const x = (column: number): number => MARGIN + column * COLUMN;
const y = (row: number): number => MARGIN + row * ROW;

/** Where a turn stands, in words: its number, kind, place among its siblings and on the story. */
function standing(n: MapNode): string {
  const among = n.siblings.count > 1 ? `reply ${n.siblings.index} of ${n.siblings.count}${n.alternative ? ` (${n.alternative})` : ''}` : '';
  const story = n.head ? 'the latest turn of the current story' : n.current ? 'on the current story' : 'on another branch';
  const status = n.status === 'complete' ? '' : n.status;
  return [`Turn ${n.number}`, n.actionKind, among, story, status].filter(Boolean).join(' · ');
}
const describe = (n: MapNode): string => `${standing(n)}\n${n.action}\n${n.summary}`;

// ── page ───────────────────────────────────────────────────────────────────────────────────────────
const app = document.getElementById('app')!;
const header = el('header');
const title = el('h2', 'title', 'Adventure map');
const status = liveStatus();
const undo = el('button', 'action-button', 'Undo last turn');
undo.id = 'undo';
undo.type = 'button';
undo.title = 'Step the current story back one turn; the turn stays on the map';
undo.addEventListener('click', () => vscode.postMessage({ type: 'undo' }));
const legend = el('div', 'legend');
legend.setAttribute('aria-hidden', 'true');
for (const [cls, words] of [['key-current', 'current story'], ['key-other', 'fork: another action'], ['key-swipe', 'swipe: another reply']]) {
  legend.append(el('span', `key ${cls}`, words));
}
header.append(title, status, undo, legend);

const details = el('div', 'details');
details.id = 'turn-details';
details.setAttribute('aria-live', 'polite');

const scroller = el('div', 'picture');
const picture = svg('svg', { id: 'map', role: 'group' });
scroller.append(picture);
const list = el('nav', 'turn-list');
list.id = 'turn-list';
list.setAttribute('aria-label', 'The adventure as a list: each branch nested under the turn it leaves from');
const body = el('div', 'body');
body.append(scroller, list);
app.append(header, details, body);

function open(id: string): void {
  opened = id;
  detailOpened = true;
  for (const marked of document.querySelectorAll('.opened')) {
    marked.classList.remove('opened');
    marked.removeAttribute('aria-current');
  }
  for (const mark of document.querySelectorAll(`[data-id="${CSS.escape(id)}"]`)) {
    mark.classList.add('opened');
    mark.setAttribute('aria-current', 'true');
  }
  showDetails(id);
  vscode.postMessage({ type: 'open', turnId: id });
}
const fork = (id: string): void => vscode.postMessage({ type: 'fork', turnId: id });

function showDetails(id: string | undefined): void {
  selected = id;
  const n = id ? byId.get(id) : undefined;
  if (!n) {
    details.replaceChildren(el('span', 'hint', nodes.length === 0 ? 'Nothing played yet: play a turn in the play panel.' : 'Hover or focus a turn to read it.'));
    return;
  }
  const openButton = linkButton('open', 'Open in play panel', () => open(n.id));
  const forkButton = linkButton('fork', 'Fork from here', () => fork(n.id));
  forkButton.disabled = generating;
  details.replaceChildren(el('div', 'standing', standing(n)), el('div', 'action-text', n.action), el('div', 'summary', n.summary), el('div', 'buttons'));
  details.lastElementChild!.append(openButton, forkButton);
  for (const shown of picture.querySelectorAll('.turn.selected')) shown.classList.remove('selected');
  picture.querySelector(`.turn[data-id="${CSS.escape(n.id)}"]`)?.classList.add('selected');
}

/** Arrow keys walk the tree: up to the turn before, down to the first turn after, sideways among siblings. */
function neighbour(n: MapNode, key: string): MapNode | undefined {
  const siblings = nodes.filter((m) => m.parentId === n.parentId).sort((a, b) => a.siblings.index - b.siblings.index);
  const at = siblings.indexOf(n);
  if (key === 'ArrowUp') return n.parentId ? byId.get(n.parentId) : undefined;
  if (key === 'ArrowDown') return nodes.find((m) => m.parentId === n.id && m.siblings.index === 1);
  if (key === 'ArrowLeft') return siblings[at - 1];
  if (key === 'ArrowRight') return siblings[at + 1];
  return undefined;
}

function edgePath(e: MapEdge): SVGPathElement {
  const [from, to] = [byId.get(e.from)!, byId.get(e.to)!];
  const [x1, y1, x2, y2] = [x(from.column), y(from.row), x(to.column), y(to.row)];
  // Straight down within a run; a branch leaves its turn and bends into its own column.
  const d = x1 === x2 ? `M${x1} ${y1} V${y2}` : `M${x1} ${y1} C${x1} ${y1 + ROW * 0.7} ${x2} ${y2 - ROW * 0.7} ${x2} ${y2}`;
  return svg('path', { d, class: ['edge', e.current ? 'current' : '', to.alternative ?? ''].filter(Boolean).join(' ') });
}

function turnNode(n: MapNode): SVGGElement {
  const classes = ['turn', n.current ? 'current' : 'other', n.head ? 'head' : '', n.alternative ?? '', n.status === 'complete' ? '' : 'unfinished', n.id === selected ? 'selected' : '', n.id === opened ? 'opened' : ''];
  const g = svg('g', {
    class: classes.filter(Boolean).join(' '),
    transform: `translate(${x(n.column)} ${y(n.row)})`,
    tabindex: 0,
    role: 'button',
    'data-id': n.id,
    ...(n.id === opened ? { 'aria-current': 'true' } : {}),
    'aria-label': `${standing(n)}: ${n.action}. ${n.summary} Enter opens it in the play panel; F forks from here.`,
  });
  const tip = svg('title');
  tip.textContent = describe(n);
  // A square drawn only while the turn is the one opened in the play panel (.opened): apart from the rings and fills of every theme.
  const square = RADIUS + 5;
  g.append(tip, svg('rect', { class: 'opened-mark', x: -square, y: -square, width: 2 * square, height: 2 * square, rx: 3 }), svg('circle', { r: RADIUS }));
  // The latest turn of the current story wears a ring, apart from its fill in every theme.
  if (n.head) g.append(svg('circle', { class: 'head-ring', r: RADIUS + 4 }));
  // Only the later replies are marked: the first child of every turn would otherwise carry a "1/2" too.
  if (n.alternative) {
    const mark = svg('text', { class: 'sibling-mark', x: RADIUS + 1, y: -RADIUS - 1 });
    mark.textContent = `${n.siblings.index}/${n.siblings.count}`;
    g.append(mark);
  }
  g.addEventListener('click', () => open(n.id));
  g.addEventListener('mouseenter', () => showDetails(n.id));
  g.addEventListener('focus', () => showDetails(n.id));
  g.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' || event.key === ' ') open(n.id);
    else if (event.key.toLowerCase() === 'f' && !generating) fork(n.id);
    else if (event.key.startsWith('Arrow')) focusTurn(neighbour(n, event.key)?.id);
    else return;
    event.preventDefault();
  });
  return g;
}

function focusTurn(id: string | undefined): void {
  if (id) picture.querySelector<SVGGElement>(`.turn[data-id="${CSS.escape(id)}"]`)?.focus();
}

/**
 * A turn's action on each row, read down the right of the picture: the current story's, and where it has
 * none (past its end, or undone to the start) the leftmost branch's, muted.
 */
function storyLabels(columns: number): SVGTextElement[] {
  const byRow = new Map<number, MapNode>();
  for (const n of nodes) {
    const held = byRow.get(n.row);
    if (!held || (n.current && !held.current) || (n.current === held.current && n.column < held.column)) byRow.set(n.row, n);
  }
  return [...byRow.values()].map((n) => {
    const label = svg('text', { class: `story-label${n.current ? '' : ' other'}`, x: x(columns) + 4, y: y(n.row) + 4 });
    label.textContent = `${n.number}. ${cut(n.action, LABEL_CHARS)}`;
    return label;
  });
}

/** The text alternative: a run of turns is one list; a branch is a list nested under the turn it leaves. */
function renderList(): void {
  const runs = new Map<number, MapNode[]>();
  for (const n of nodes) runs.set(n.column, [...(runs.get(n.column) ?? []), n]);
  const items = new Map<string, HTMLLIElement>();
  const runList = (run: MapNode[]): HTMLOListElement => {
    const ol = el('ol');
    for (const n of run) {
      const li = el('li', n.current ? 'current' : 'other');
      li.value = n.number;
      const name = linkButton('turn-link', cut(n.action, LABEL_CHARS), () => open(n.id));
      name.dataset.id = n.id;
      if (n.id === opened) {
        name.classList.add('opened');
        name.setAttribute('aria-current', 'true');
      }
      name.title = describe(n);
      name.setAttribute('aria-label', `${standing(n)}: ${n.action}. ${n.summary}`);
      const forkButton = linkButton('fork', 'fork', () => fork(n.id));
      forkButton.setAttribute('aria-label', `Fork from turn ${n.number}`);
      forkButton.disabled = generating;
      li.append(name, forkButton);
      items.set(n.id, li);
      ol.append(li);
    }
    return ol;
  };
  const root = el('div');
  // Columns in order: a branch's parent is always in an earlier column, so its item exists already.
  for (const [, run] of [...runs].sort(([a], [b]) => a - b)) {
    const start = run[0]!;
    const ol = runList(run);
    const parent = start.parentId ? items.get(start.parentId) : undefined;
    if (!parent) {
      root.append(ol);
      continue;
    }
    const branch = el('div', 'branch');
    branch.append(el('span', 'branch-note', start.alternative === 'swipe' ? `Another reply (${start.siblings.index} of ${start.siblings.count}):` : `A fork (${start.siblings.index} of ${start.siblings.count}):`), ol);
    parent.append(branch);
  }
  list.replaceChildren(...(nodes.length > 0 ? [root] : []));
}

function render(message: Extract<MapHostMessage, { type: 'map' }>): void {
  const hadFocus = picture.contains(document.activeElement) ? (document.activeElement as Element).getAttribute('data-id') : null;
  nodes = message.nodes;
  byId = new Map(nodes.map((n) => [n.id, n]));
  generating = message.generating;
  title.textContent = `Adventure map: ${message.adventureTitle}`;
  const head = nodes.find((n) => n.head);
  const branches = message.columns;
  status.textContent = `${nodes.length} turn${nodes.length === 1 ? '' : 's'} · ${branches} branch${branches === 1 ? '' : 'es'} · ${head ? `current story at turn ${head.number}` : 'current story before the first turn'}${generating ? ' · a turn is being told' : ''}`;
  undo.disabled = generating || !head;
  const width = x(message.columns) + 12 + LABEL_CHARS * 7;
  const height = y(Math.max(message.rows, 1) - 1) + MARGIN;
  picture.setAttribute('width', String(width));
  picture.setAttribute('height', String(height));
  picture.setAttribute('viewBox', `0 0 ${width} ${height}`);
  picture.setAttribute('aria-label', `Adventure map of ${message.adventureTitle}: ${status.textContent}. Tab reaches each turn, arrow keys walk the tree; the list beside it holds the same turns.`);
  // Other branches first, so the current story's lines are drawn over them where they meet.
  const edges = [...message.edges].sort((a, b) => Number(a.current) - Number(b.current));
  const drawn = [...nodes].sort((a, b) => Number(a.current) - Number(b.current));
  picture.replaceChildren(svg('g', { class: 'edges' }), svg('g', { class: 'turns' }), svg('g', { class: 'labels' }));
  picture.children[0]!.append(...edges.map(edgePath));
  picture.children[1]!.append(...drawn.map(turnNode));
  picture.children[2]!.append(...storyLabels(message.columns));
  renderList();
  if (hadFocus && byId.has(hadFocus)) focusTurn(hadFocus);
  const openedShown = detailOpened && opened !== undefined && byId.has(opened);
  if (head?.id !== lastHead) detailOpened = false;
  showDetails(openedShown ? opened : selected && byId.has(selected) && head?.id === lastHead ? selected : head?.id);
  // The story moved on (a turn played, a fork, an undo): its latest turn is brought into view.
  if (head && head.id !== lastHead) picture.querySelector(`.turn[data-id="${CSS.escape(head.id)}"]`)?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  lastHead = head?.id;
}

window.addEventListener('message', (event: MessageEvent<unknown>) => {
  const parsed = MapHostMessage.safeParse(event.data);
  if (!parsed.success) return;
  vscode.setState(parsed.data.target);
  render(parsed.data);
});

vscode.postMessage({ type: 'ready' });
