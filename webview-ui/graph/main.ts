// The Campaign Graph: entities as nodes (size by mentions, colour by kind), mentions and [[links]] between
// their files as edges, canon conflicts as red dashed edges, Reference and Inspiration files that name
// entities as square nodes. Drawn in SVG from the host's data; every label goes in as text, never as markup.
// Beside the picture, the same data as a list (the text alternative, and the keyboard's way in).
import { GRAPH_CLASSES, KNOWN_KINDS, GraphHostMessage, type GraphConflict, type GraphEdge, type GraphNode, type GraphState, type GraphSuggestion, type GraphWebviewMessage } from './protocol';
import { nodeRadius, type Placed } from './layout';
import { estimateWidth, LABEL_FONT_PX, placeLabels } from './labels';
import { fitView, groupLabel, groupRadius, labelRequests, layoutDrawn, overview, type FoldedGroup, type Overview } from './overview';
import { el, liveStatus, svg } from '../dom';

interface VsCodeApi {
  postMessage(message: GraphWebviewMessage): void;
  setState(state: GraphState): void;
}
declare function acquireVsCodeApi(): VsCodeApi;
const vscode = acquireVsCodeApi();

const radius = (n: GraphNode): number => nodeRadius(n.mentions);
/** How many of an entity's neighbours the list names, the most-mentioned first; the rest are counted. */
const LIST_NEIGHBOURS = 8;

let nodes: GraphNode[] = [];
let edges: GraphEdge[] = [];
let conflicts: GraphConflict[] = [];
let suggestions: GraphSuggestion[] = [];
let positions = new Map<string, Placed>();
/** Kinds the writer unticked; every other kind, known or the campaign's own, is shown. */
const hiddenKinds = new Set<string>();
const shownClasses = new Set<string>(GRAPH_CLASSES);
/** Folded kinds the writer opened in the overview. */
const opened = new Set<string>();
/** Entities that start at a group's place, the group just opened: they spread out from where it was. */
let seeds = new Map<string, Placed>();
/** What the last render drew: the labels pass reads it again on every zoom. */
let drawn: Overview<GraphNode> = { nodes: [], groups: [], edges: [], degree: new Map() };
let text = '';
let focus: string | undefined;
let steps = 1;

// ── controls ───────────────────────────────────────────────────────────────────────────────────────
const app = document.getElementById('app')!;
const header = el('header');
const title = el('h2', 'title', 'Campaign graph');
const status = liveStatus();
const search = el('input');
search.id = 'filter-text';
search.type = 'search';
search.placeholder = 'Filter by name or folder';
search.setAttribute('aria-label', 'Filter entities by name or folder');
search.addEventListener('input', () => {
  text = search.value.trim().toLowerCase();
  render();
});
/**
 * The campaign's kinds, largest first, each with its colour class: the known kinds their own, the rest the
 * palette's (palette-N is the colour of KNOWN_KINDS[N], and red last), those no known kind here has taken first.
 */
let kindOrder: string[] = [];
const PALETTE = KNOWN_KINDS.length + 1;
const isKnown = (kind: string): boolean => (KNOWN_KINDS as readonly string[]).includes(kind);
function kindClass(kind: string): string {
  if (isKnown(kind)) return kind;
  const taken = new Set(kindOrder.filter(isKnown).map((k) => (KNOWN_KINDS as readonly string[]).indexOf(k)));
  const colours = [...Array.from({ length: PALETTE }, (_, i) => i).filter((i) => !taken.has(i)), ...taken];
  const at = kindOrder.filter((k) => !isKnown(k)).indexOf(kind);
  return `palette-${colours[Math.max(0, at) % PALETTE]}`;
}
/** A row of boxes, one per value, each showing or hiding the nodes that have it (`shown` ticks it). */
function filterGroup(group: HTMLFieldSetElement, legend: string, values: readonly string[], shown: (value: string) => boolean, set: (value: string, on: boolean) => void, key: 'kind' | 'class'): void {
  group.replaceChildren(el('legend', undefined, legend));
  for (const value of values) {
    const label = el('label', `filter ${key === 'kind' ? kindClass(value) : `class-${value}`}`);
    const box = el('input');
    box.type = 'checkbox';
    box.checked = shown(value);
    box.dataset[key] = value;
    box.addEventListener('change', () => {
      set(value, box.checked);
      render();
    });
    label.append(box, el('span', 'swatch'), document.createTextNode(value));
    group.append(label);
  }
}
const kinds = el('fieldset', 'filters');
const showKinds = (): void =>
  filterGroup(kinds, 'Kinds', kindOrder, (k) => !hiddenKinds.has(k), (k, on) => void (on ? hiddenKinds.delete(k) : hiddenKinds.add(k)), 'kind');
// Canon is the entities; Reference and Inspiration are the files that name them (the entity model is canon only).
const classes = el('fieldset', 'filters');
filterGroup(classes, 'Classes', GRAPH_CLASSES, (c) => shownClasses.has(c), (c, on) => void (on ? shownClasses.add(c) : shownClasses.delete(c)), 'class');
const focusLine = el('div', 'focus-line');
const stepsInput = el('input');
stepsInput.id = 'focus-steps';
stepsInput.type = 'number';
stepsInput.min = '1';
stepsInput.max = '4';
stepsInput.value = '1';
stepsInput.setAttribute('aria-label', 'Steps out from the focused entity');
stepsInput.addEventListener('change', () => {
  steps = Math.max(1, Math.min(4, Number(stepsInput.value) || 1));
  render();
});
const clearFocus = el('button', 'link-button', 'Show all');
clearFocus.id = 'clear-focus';
clearFocus.type = 'button';
clearFocus.addEventListener('click', () => {
  focus = undefined;
  render();
});
/** The conflict under the pointer or the keyboard focus, told in full (a tooltip never shows for the keyboard). */
const detail = el('p', 'conflict-detail');
detail.id = 'detail';
detail.setAttribute('aria-live', 'polite');
header.append(title, status, search, kinds, classes, focusLine, detail);

const picture = svg('svg', { id: 'graph', role: 'img' });
const world = svg('g');
const edgeLayer = svg('g', { class: 'edges' });
const conflictLayer = svg('g', { class: 'conflicts' });
const nodeLayer = svg('g', { class: 'nodes' });
const labelLayer = svg('g', { class: 'labels' });
// Conflicts over the nodes: a short red edge in a crowded cluster must still be seen. Labels over all.
world.append(edgeLayer, nodeLayer, conflictLayer, labelLayer);
picture.append(world);
const list = el('ul', 'entity-list');
list.id = 'entity-list';
list.setAttribute('aria-label', 'Entities shown in the graph');
const body = el('div', 'body');
body.append(picture, list);
app.append(header, body);

// ── pan and zoom ───────────────────────────────────────────────────────────────────────────────────
let view = { x: 0, y: 0, k: 1 };
/** The writer has panned or zoomed: a resize no longer refits the picture over their choice. */
let moved = false;
let labelsPending = false;
const applyView = (): void => {
  world.setAttribute('transform', `translate(${view.x} ${view.y}) scale(${view.k})`);
  // The labels are placed again for the new zoom, once per frame however fast the wheel turns.
  if (labelsPending) return;
  labelsPending = true;
  requestAnimationFrame(() => {
    labelsPending = false;
    drawLabels();
  });
};
const pictureSize = (): { width: number; height: number } => {
  const { width, height } = picture.getBoundingClientRect();
  return { width, height };
};
function fit(ids: readonly string[]): void {
  const { width, height } = pictureSize();
  const fitted = fitView(ids.map((id) => positions.get(id)).filter((p): p is Placed => p !== undefined), width, height);
  if (!fitted) return;
  view = fitted;
  applyView();
}
picture.addEventListener('wheel', (event) => {
  event.preventDefault();
  const factor = Math.exp(-event.deltaY * 0.002);
  const box = picture.getBoundingClientRect();
  const [px, py] = [event.clientX - box.left, event.clientY - box.top];
  view = { k: view.k * factor, x: px - (px - view.x) * factor, y: py - (py - view.y) * factor };
  moved = true;
  applyView();
}, { passive: false });
let drag: { x: number; y: number } | undefined;
picture.addEventListener('pointerdown', (event) => {
  if ((event.target as Element).closest('.node')) return;
  drag = { x: event.clientX - view.x, y: event.clientY - view.y };
  picture.setPointerCapture(event.pointerId);
});
picture.addEventListener('pointermove', (event) => {
  if (!drag) return;
  view = { ...view, x: event.clientX - drag.x, y: event.clientY - drag.y };
  moved = true;
  applyView();
});
picture.addEventListener('pointerup', () => (drag = undefined));
// The panel is resized or laid out anew (a column opened beside it): what is shown is fitted again.
new ResizeObserver(() => {
  if (!moved) fit([...drawn.groups.map((g) => g.id), ...drawn.nodes.map((n) => n.id)]);
}).observe(picture);

// ── drawing ────────────────────────────────────────────────────────────────────────────────────────
/** The focused entity and its neighbours `steps` links out, or undefined when nothing is focused. */
function neighbourhood(): Set<string> | undefined {
  if (!focus) return undefined;
  const around = new Map<string, string[]>();
  for (const e of edges) {
    around.set(e.from, [...(around.get(e.from) ?? []), e.to]);
    around.set(e.to, [...(around.get(e.to) ?? []), e.from]);
  }
  let frontier = [focus];
  const seen = new Set(frontier);
  for (let i = 0; i < steps; i++) {
    frontier = frontier.flatMap((id) => around.get(id) ?? []).filter((id) => !seen.has(id));
    for (const id of frontier) seen.add(id);
  }
  return seen;
}

function visible(): GraphNode[] {
  const near = neighbourhood();
  return nodes.filter(
    (n) => !hiddenKinds.has(n.kind) && shownClasses.has(n.class) && (!near || near.has(n.id)) && (!text || n.label.toLowerCase().includes(text) || n.path.toLowerCase().includes(text) || near?.has(n.id)),
  );
}

const open = (id: string): void => vscode.postMessage({ type: 'open', id });
/** A place in a campaign file, 1-based line: each side of a conflict or suggestion. */
type FileLine = { path: string; line: number };
const openAt = (side: FileLine): void => vscode.postMessage({ type: 'openAt', path: side.path, line: side.line });
function focusOn(id: string): void {
  focus = id;
  render();
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
const superseded = (n: GraphNode): string => `only in superseded ${n.path} (by ${n.supersededBy.join(', ')})`;

/** What a weak mention is, in the writer's words (see Mention.weak). */
const weakWords = (n: number): string => `${plural(n, 'weak mention')} (only an everyday word that is also a name, with no link or other name of it nearby)`;

/** An edge's tooltip and list words: `Ice Devil → Ice: 3 weak mentions (…)`. */
function describeEdge(e: GraphEdge, labelOf: (id: string) => string): string {
  const counts = [e.count > 0 ? plural(e.count, 'mention') : '', e.weak > 0 ? weakWords(e.weak) : ''].filter(Boolean).join(' and ');
  return `${labelOf(e.from)} → ${labelOf(e.to)}: ${counts}${e.linked ? ' (linked)' : ''}`;
}

function describe(n: GraphNode): string {
  const what = n.class === 'canon' ? n.kind : `${n.class} file`;
  const marks =
    n.class === 'canon'
      ? [n.neverMentioned ? 'never mentioned elsewhere' : plural(n.mentions, 'mention'), n.neverRetrieved ? 'never retrieved in play' : '']
      : [`names canon entities ${plural(n.mentions, 'time')}`, n.weakMentions > 0 ? weakWords(n.weakMentions) : ''];
  if (n.supersededBy.length > 0) marks.push(superseded(n));
  return `${n.label} (${what}) — ${marks.filter(Boolean).join(', ')} · ${n.path}`;
}

/** `Canon conflict: Sister Mara — Age: "34" in characters/mara.md:8 vs "41" in canon.md:30`: both sides, each with its file. */
function describeConflict(c: GraphConflict): string {
  return `Canon conflict: ${c.entity} — ${c.attribute}: "${c.a.value}" in ${c.a.path}:${c.a.line} vs "${c.b.value}" in ${c.b.path}:${c.b.line}`;
}

/** `Suggested by the model: Mara — …: "…" in characters/mara.md:12 vs "…" in places/old-abbey.md:13`: said as a suggestion, both quotes with their files. */
function describeSuggestion(s: GraphSuggestion): string {
  return `Suggested by the model (not yet accepted or dismissed): ${s.entity} — ${s.explanation}: "${s.a.quote}" in ${s.a.path}:${s.a.line} vs "${s.b.quote}" in ${s.b.path}:${s.b.line}`;
}

/**
 * A contradiction drawn between the two files' entities, or as a ring when one entity's files disagree:
 * canon's conflicts as red dashed edges (`conflict`), the model's suggestions as dotted ones (`suggestion`).
 */
function contradictionMark(c: GraphConflict | GraphSuggestion, kind: 'conflict' | 'suggestion', text: string): SVGElement {
  const [a, b] = [positions.get(c.from)!, positions.get(c.to)!];
  const [ra, rb] = [c.from, c.to].map((id) => radius(nodes.find((n) => n.id === id)!) + 2) as [number, number];
  // From rim to rim: drawn over the nodes, the edge must leave their middles free to click.
  const [dx, dy] = [b.x - a.x, b.y - a.y];
  const length = Math.hypot(dx, dy) || 1;
  const [tag, at] =
    c.from === c.to
      ? (['circle', { cx: a.x, cy: a.y, r: ra + 3 }] as const)
      : (['line', { x1: a.x + (dx * ra) / length, y1: a.y + (dy * ra) / length, x2: b.x - (dx * rb) / length, y2: b.y - (dy * rb) / length }] as const);
  // A casing in the background colour under the dashes: they stay legible across a thicket of links, in every theme.
  const casing = svg(tag, { ...at, class: 'conflict-casing' });
  // A suggestion on the same two entities as a conflict is drawn a little further out, beside it rather than on it.
  const shape = svg(tag, { ...(kind === 'suggestion' && tag === 'circle' ? { ...at, r: ra + 7 } : at), class: kind });
  shape.setAttribute('tabindex', '0');
  shape.setAttribute('role', 'img');
  shape.setAttribute('aria-label', text);
  const tip = svg('title');
  tip.textContent = text;
  shape.append(tip);
  const show = (): void => void (detail.textContent = text);
  const hide = (): void => void (detail.textContent = '');
  shape.addEventListener('pointerenter', show);
  shape.addEventListener('focus', show);
  shape.addEventListener('pointerleave', hide);
  shape.addEventListener('blur', hide);
  const mark = svg('g');
  mark.append(casing, shape);
  return mark;
}

/** A contradiction in the list: its mark (coloured as its edge), its words, each side's file and line a button that opens it there. */
function contradictionLine(className: string, mark: string, lead: string, a: FileLine, between: string, b: FileLine): HTMLDivElement {
  const side = (s: FileLine): HTMLButtonElement => {
    const button = el('button', 'link-button side', `${s.path}:${s.line}`);
    button.type = 'button';
    button.setAttribute('aria-label', `Open ${s.path} at line ${s.line}`);
    button.addEventListener('click', () => openAt(s));
    return button;
  };
  const line = el('div', className);
  line.append(el('span', 'mark', mark), document.createTextNode(` ${lead}`), side(a), document.createTextNode(between), side(b));
  return line;
}

/** A label measured as the page draws it (the theme's font at the labels' size). */
const measureContext = document.createElement('canvas').getContext('2d');
function measure(text: string): number {
  if (!measureContext) return estimateWidth(text);
  measureContext.font = `${LABEL_FONT_PX}px ${getComputedStyle(document.body).fontFamily}`;
  return measureContext.measureText(text).width;
}

/** The labels for the current zoom (labels.ts), drawn at one size on screen. */
function drawLabels(): void {
  const k = view.k;
  labelLayer.replaceChildren(
    ...placeLabels(labelRequests(drawn, positions, radius, focus), k, measure, { left: -view.x, top: -view.y, ...pictureSize() }).map((label) => {
      const text = svg('text', { x: (label.left + label.width / 2) / k, y: (label.top + label.height - 4) / k, 'font-size': LABEL_FONT_PX / k, 'stroke-width': 3 / k, 'data-for': label.id });
      text.textContent = label.text;
      return text;
    }),
  );
}

const entityCount = (n: number): string => `${n} ${n === 1 ? 'entity' : 'entities'}`;

function openGroup(g: FoldedGroup): void {
  opened.add(g.kind);
  const at = positions.get(g.id);
  if (at) seeds = new Map(g.members.map((id) => [id, at]));
  moved = false;
  render();
}

/** A folded kind: a ring in its kind's colour, opened by a click or Enter (its list entry has a button too). */
function groupNode(g: FoldedGroup, links: number): SVGGElement {
  const at = positions.get(g.id)!;
  const what = `${g.kind}: ${entityCount(g.members.length)} folded, ${plural(links, 'link')}`;
  const node = svg('g', { class: `node group ${kindClass(g.kind)}`, transform: `translate(${at.x} ${at.y})`, tabindex: 0, role: 'button', 'data-id': g.id, 'aria-label': `${what}. Enter shows them.` });
  const tip = svg('title');
  tip.textContent = `${what}. Click to show them.`;
  node.append(tip, svg('circle', { r: groupRadius(g) }));
  node.addEventListener('click', () => openGroup(g));
  node.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter' && event.key !== ' ') return;
    event.preventDefault();
    openGroup(g);
  });
  return node;
}

/** ` · 320 links: Ice Devil, Wall of Ice, … and 312 more`: the most-mentioned neighbours first, the rest counted. */
function neighbourLine(id: string, shownEdges: readonly GraphEdge[], byId: ReadonlyMap<string, GraphNode>): string {
  const weight = new Map<string, number>();
  for (const e of shownEdges) {
    if (e.from !== id && e.to !== id) continue;
    const other = e.from === id ? e.to : e.from;
    weight.set(other, (weight.get(other) ?? 0) + e.count + e.weak);
  }
  const ranked = [...weight].sort((a, b) => b[1] - a[1] || byId.get(a[0])!.label.localeCompare(byId.get(b[0])!.label));
  if (ranked.length === 0) return '';
  const named = ranked.slice(0, LIST_NEIGHBOURS).map(([other]) => byId.get(other)!.label).join(', ');
  const more = ranked.length > LIST_NEIGHBOURS ? ` and ${ranked.length - LIST_NEIGHBOURS} more` : '';
  return ` · ${plural(ranked.length, 'link')}: ${named}${more}`;
}

function render(): void {
  const shown = visible();
  const ids = new Set(shown.map((n) => n.id));
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const shownEdges = edges.filter((e) => ids.has(e.from) && ids.has(e.to));
  // A focus or a text filter draws all it leaves; otherwise a large campaign opens on its overview.
  drawn = overview(shown, shownEdges, opened, Boolean(focus || text));
  const before = positions;
  positions = layoutDrawn(drawn, radius, positions, seeds);
  seeds = new Map();
  const placed: GraphState['placed'] = [...positions].map(([id, p]) => [id, p.x, p.y]);
  if (placed.some(([id]) => !before.has(id))) vscode.postMessage({ type: 'placed', placed });
  // A window reload loses the extension's memory of the layout: the webview's own state brings it back.
  vscode.setState({ campaignRoot, placed });
  const groupsById = new Map(drawn.groups.map((g) => [g.id, g]));
  const labelOf = (id: string): string => byId.get(id)?.label ?? groupLabel(groupsById.get(id)!);
  edgeLayer.replaceChildren(
    ...drawn.edges.map((e) => {
      const [a, b] = [positions.get(e.from)!, positions.get(e.to)!];
      const toGroup = groupsById.has(e.from) || groupsById.has(e.to);
      const marks = ['edge', e.linked ? 'linked' : '', e.count === 0 ? 'weak' : '', toGroup ? 'to-group' : ''].filter(Boolean).join(' ');
      const line = svg('line', { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: marks, 'stroke-width': Math.min(4, 0.6 + Math.log2(e.count + e.weak)) });
      const tip = svg('title');
      tip.textContent = describeEdge(e, labelOf);
      line.append(tip);
      return line;
    }),
  );
  const drawnIds = new Set(drawn.nodes.map((n) => n.id));
  const shownConflicts = conflicts.filter((c) => drawnIds.has(c.from) && drawnIds.has(c.to));
  const shownSuggestions = suggestions.filter((s) => drawnIds.has(s.from) && drawnIds.has(s.to));
  conflictLayer.replaceChildren(
    ...shownConflicts.map((c) => contradictionMark(c, 'conflict', describeConflict(c))),
    ...shownSuggestions.map((s) => contradictionMark(s, 'suggestion', describeSuggestion(s))),
  );
  const conflicted = new Set(shownConflicts.flatMap((c) => [c.from, c.to]));
  const told = [...shownConflicts.map(describeConflict), ...shownSuggestions.map(describeSuggestion)];
  if (!told.includes(detail.textContent ?? '')) detail.textContent = '';
  const groupLinks = (g: FoldedGroup): number => drawn.edges.filter((e) => e.from === g.id || e.to === g.id).length;
  nodeLayer.replaceChildren(
    ...drawn.groups.map((g) => groupNode(g, groupLinks(g))),
    ...drawn.nodes.map((n) => {
      const at = positions.get(n.id)!;
      const marks = ['node', kindClass(n.kind), `class-${n.class}`, conflicted.has(n.id) ? 'in-conflict' : '', n.neverMentioned ? 'never-mentioned' : '', n.neverRetrieved ? 'never-retrieved' : '', n.supersededBy.length > 0 ? 'superseded' : '', n.mentions === 0 && n.weakMentions > 0 ? 'weak-only' : '', n.id === focus ? 'focused' : ''];
      const g = svg('g', { class: marks.filter(Boolean).join(' '), transform: `translate(${at.x} ${at.y})`, tabindex: 0, role: 'button', 'data-id': n.id, 'aria-label': `${describe(n)}. Enter opens its file; F focuses it.` });
      const tip = svg('title');
      tip.textContent = `${describe(n)}${n.summary ? `\n${n.summary}` : ''}`;
      const r = radius(n);
      // A file beside canon is a square: it names entities, it is not one.
      g.append(tip, n.class === 'canon' ? svg('circle', { r }) : svg('rect', { x: -r, y: -r, width: 2 * r, height: 2 * r, rx: 2 }));
      g.addEventListener('click', (event) => (event.altKey ? focusOn(n.id) : open(n.id)));
      g.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') open(n.id);
        else if (event.key.toLowerCase() === 'f') focusOn(n.id);
        else return;
        event.preventDefault();
      });
      return g;
    }),
  );
  list.replaceChildren(
    ...drawn.groups.map((g) => {
      const item = el('li', `entry group ${kindClass(g.kind)}`);
      const show = el('button', 'link-button show-group', 'show them');
      show.type = 'button';
      show.setAttribute('aria-label', `Show the ${entityCount(g.members.length)} of ${g.kind} folded in the overview`);
      show.addEventListener('click', () => openGroup(g));
      const top = g.members.slice(0, LIST_NEIGHBOURS).map((id) => byId.get(id)!.label).join(', ');
      const more = g.members.length > LIST_NEIGHBOURS ? ` and ${g.members.length - LIST_NEIGHBOURS} more` : '';
      item.append(el('span', 'entity', g.kind), el('span', 'detail', ` · ${entityCount(g.members.length)} folded, the most connected: ${top}${more} `), show);
      return item;
    }),
    ...[...drawn.nodes].sort((a, b) => b.mentions - a.mentions || a.label.localeCompare(b.label)).map((n) => {
      const item = el('li', `entry ${kindClass(n.kind)} class-${n.class}${n.supersededBy.length > 0 ? ' superseded' : ''}`);
      const name = el('button', 'link-button entity', n.label);
      name.type = 'button';
      name.dataset.id = n.id;
      name.title = describe(n);
      name.addEventListener('click', () => open(n.id));
      const focusButton = el('button', 'link-button focus', 'focus');
      focusButton.type = 'button';
      focusButton.setAttribute('aria-label', `Focus ${n.label} with its neighbours`);
      focusButton.addEventListener('click', () => focusOn(n.id));
      const what =
        n.class === 'canon'
          ? `${n.kind} · ${n.neverMentioned ? 'never mentioned elsewhere' : plural(n.mentions, 'mention')}${n.neverRetrieved ? ' · never retrieved' : ''}`
          : `${n.class} file · names canon ${plural(n.mentions, 'time')}${n.weakMentions > 0 ? ` · ${plural(n.weakMentions, 'weak mention')}` : ''}`;
      const faded = n.supersededBy.length > 0 ? ` · ${superseded(n)}` : '';
      item.append(name, el('span', 'detail', ` ${what}${faded}${neighbourLine(n.id, shownEdges, byId)} `), focusButton);
      // Each conflict and suggestion is listed once, under the entity holding its first side, with both sides to open.
      const withOther = (c: { from: string; to: string }) => (c.to === c.from ? '' : ` with ${byId.get(c.to)!.label}`);
      for (const c of shownConflicts.filter((x) => x.from === n.id)) {
        item.append(contradictionLine('conflict-line', '⚠', `conflicts${withOther(c)}: ${c.entity} — ${c.attribute}: "${c.a.value}" in `, c.a, ` vs "${c.b.value}" in `, c.b));
      }
      for (const s of shownSuggestions.filter((x) => x.from === n.id)) {
        item.append(contradictionLine('suggestion-line', '?', `the model suggests a conflict${withOther(s)}: ${s.entity} — ${s.explanation}: "${s.a.quote}" in `, s.a, ` vs "${s.b.quote}" in `, s.b));
      }
      return item;
    }),
  );
  const focused = focus && nodes.find((n) => n.id === focus);
  focusLine.replaceChildren(...(focused ? [document.createTextNode(`Focused on ${focused.label}, steps out: `), stepsInput, clearFocus] : []));
  const entities = nodes.filter((n) => n.class === 'canon');
  const files = nodes.length - entities.length;
  const shownFiles = shown.filter((n) => n.class !== 'canon').length;
  const folded = drawn.groups.reduce((sum, g) => sum + g.members.length, 0);
  status.textContent = [
    `${shown.length - shownFiles} of ${entities.length} entities`,
    ...(files > 0 ? [`${shownFiles} of ${files} reference and inspiration files`] : []),
    plural(shownEdges.length, 'link'),
    ...(conflicts.length > 0 ? [plural(shownConflicts.length, 'canon conflict')] : []),
    ...(suggestions.length > 0 ? [plural(shownSuggestions.length, 'suggested conflict')] : []),
    ...(folded > 0 ? [`${drawn.nodes.length} drawn (the most connected${opened.size > 0 ? ' and the kinds opened' : ''}), ${folded} folded by kind`] : []),
  ].join(', ');
  picture.setAttribute('aria-label', `Campaign graph: ${status.textContent}. The list beside it holds the same entities.`);
  // What a filter or focus leaves is fitted to the panel, unless the writer has panned or zoomed (a focus always is).
  if (focus) moved = false;
  if (!moved) fit([...drawn.groups.map((g) => g.id), ...drawnIds]);
  drawLabels();
}

let campaignRoot = '';
window.addEventListener('message', (event: MessageEvent<unknown>) => {
  const parsed = GraphHostMessage.safeParse(event.data);
  if (!parsed.success) return;
  const message = parsed.data;
  const first = positions.size === 0;
  title.textContent = `Campaign graph: ${message.campaignTitle}`;
  campaignRoot = message.campaignRoot;
  nodes = message.nodes;
  edges = message.edges;
  conflicts = message.conflicts;
  suggestions = message.suggestions;
  if (first) positions = new Map(message.placed.map(([id, x, y]) => [id, { x, y }]));
  const sizes = new Map<string, number>();
  for (const n of nodes) sizes.set(n.kind, (sizes.get(n.kind) ?? 0) + 1);
  kindOrder = [...sizes].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([kind]) => kind);
  showKinds();
  render();
});

vscode.postMessage({ type: 'ready' });
