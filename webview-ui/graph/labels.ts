// Which labels the graph draws at the current zoom: most important first, each kept only where it overlaps
// no label already placed, shortened before it is dropped. Run again on every zoom: zoomed in, there is room
// for more. Labels are drawn at one size on screen whatever the zoom, so the pass works in screen pixels.

/** The labels' size on screen, in pixels. */
export const LABEL_FONT_PX = 11;
/** Past this many letters a label that does not fit whole is tried shortened to it. */
const SHORT_LETTERS = 14;
/** Space kept clear around each label, in pixels. */
const PAD = 2;
const CELL = 64;

export interface LabelRequest {
  id: string;
  /** The node's centre and radius, in layout units. */
  x: number;
  y: number;
  r: number;
  text: string;
  /** Higher is placed first (the focused entity, groups, the most connected). */
  priority: number;
}

/** A drawn label: its text (perhaps shortened) and its box on screen at scale 1 of the pan (pixels). */
export interface PlacedLabel {
  id: string;
  text: string;
  left: number;
  top: number;
  width: number;
  height: number;
}

export const overlap = (a: PlacedLabel, b: PlacedLabel): boolean =>
  a.left < b.left + b.width && b.left < a.left + a.width && a.top < b.top + b.height && b.top < a.top + a.height;

/** A label shortened to its first words, or its first letters, and an ellipsis. */
export function shortened(text: string): string {
  if (text.length <= SHORT_LETTERS) return text;
  const words = text.slice(0, SHORT_LETTERS).replace(/\s+\S*$/, '');
  return `${words.length >= 4 ? words : text.slice(0, SHORT_LETTERS - 1)}…`;
}

/** What a label measures in pixels without a browser: a generous average, for tests and the bench. */
export const estimateWidth = (text: string): number => text.length * LABEL_FONT_PX * 0.62;

/** Where a label may sit, by preference: under its node, over it, to its right, to its left. */
const SIDES = ['below', 'above', 'right', 'left'] as const;

function boxAt(request: LabelRequest, k: number, text: string, width: number, side: (typeof SIDES)[number]): PlacedLabel {
  const [x, y, r, height] = [request.x * k, request.y * k, request.r * k, LABEL_FONT_PX + 2 * PAD];
  const [left, top] =
    side === 'below' ? [x - width / 2, y + r + 1]
    : side === 'above' ? [x - width / 2, y - r - 1 - height]
    : side === 'right' ? [x + r + 2, y - height / 2]
    : [x - r - 2 - width, y - height / 2];
  return { id: request.id, text, left, top, width, height };
}

/**
 * The labels drawn at zoom `k`, in order of priority: each whole where it overlaps no placed label (under its
 * node, else over, right or left of it; given `within`, inside the picture, so none is cut by its edge), else
 * shortened where that fits, else not drawn. No two drawn labels overlap.
 */
export function placeLabels(
  requests: readonly LabelRequest[],
  k: number,
  measure: (text: string) => number = estimateWidth,
  within?: { left: number; top: number; width: number; height: number },
): PlacedLabel[] {
  const placed: PlacedLabel[] = [];
  const grid = new Map<string, PlacedLabel[]>();
  const cells = (box: PlacedLabel): string[] => {
    const keys: string[] = [];
    for (let cx = Math.floor(box.left / CELL); cx <= Math.floor((box.left + box.width) / CELL); cx++) {
      for (let cy = Math.floor(box.top / CELL); cy <= Math.floor((box.top + box.height) / CELL); cy++) keys.push(`${cx},${cy}`);
    }
    return keys;
  };
  const inside = (box: PlacedLabel): boolean =>
    !within || (box.left >= within.left && box.top >= within.top && box.left + box.width <= within.left + within.width && box.top + box.height <= within.top + within.height);
  const free = (box: PlacedLabel): boolean => inside(box) && cells(box).every((key) => !(grid.get(key) ?? []).some((other) => overlap(box, other)));
  for (const request of [...requests].sort((a, b) => b.priority - a.priority || a.id.localeCompare(b.id))) {
    const tries = [...new Set([request.text, shortened(request.text)])].flatMap((text) => {
      const width = measure(text) + 2 * PAD;
      return SIDES.map((side) => boxAt(request, k, text, width, side));
    });
    const box = tries.find(free);
    if (!box) continue;
    placed.push(box);
    for (const key of cells(box)) grid.set(key, [...(grid.get(key) ?? []), box]);
  }
  return placed;
}
