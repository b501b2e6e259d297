// How the pages build their elements: campaign and model text always goes in as text, never as markup.

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K];
export function el(tag: string, className?: string, text?: string): HTMLElement;
export function el(tag: string, className?: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number> = {}): SVGElementTagNameMap[K] {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

/** A small action inside a turn or a list: a real button (keyboard and screen readers), drawn as a link. */
export function linkButton(className: string, label: string, onClick: () => void): HTMLButtonElement {
  const node = el('button', `link-button ${className}`, label);
  node.type = 'button';
  node.addEventListener('click', onClick);
  return node;
}

/** The page's one-line status (what is shown, what happened), read out by screen readers as it changes. */
export function liveStatus(): HTMLSpanElement {
  const node = el('span', 'status');
  node.id = 'status';
  node.setAttribute('role', 'status');
  return node;
}
