// The play panel. It renders what the host sends and posts what the writer asks for; every story rule
// lives in the host. All campaign and model text goes in through textContent, never as markup.
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-collapsible/index.js';
import '@vscode-elements/elements/dist/vscode-textarea/index.js';
import '@vscode-elements/elements/dist/vscode-divider/index.js';
import { HostMessage, type ContextSectionView, type TurnView, type WebviewMessage } from './protocol';

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const app = document.getElementById('app')!;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K];
function el(tag: string, className?: string, text?: string): HTMLElement;
function el(tag: string, className?: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function button(id: string, label: string, onClick: () => void, secondary = false): HTMLElement {
  const node = el('vscode-button');
  node.id = id;
  node.textContent = label;
  if (secondary) node.setAttribute('secondary', '');
  node.addEventListener('click', onClick);
  return node;
}

const header = el('header');
const title = el('h2', 'title', 'Loading…');
const subtitle = el('div', 'subtitle');
header.append(title, subtitle);

const transcript = el('section', 'transcript');
transcript.id = 'transcript';
const errorLine = el('div', 'error');
errorLine.id = 'error';

const action = el('vscode-textarea') as HTMLElement & { value: string };
action.id = 'action';
action.setAttribute('placeholder', 'What do you do?');
action.setAttribute('rows', '3');

const send = (kind: 'do' | 'say' | 'story'): void => {
  const text = action.value.trim();
  if (!text) return;
  vscode.postMessage({ type: 'act', kind, text });
  action.value = '';
};
const controls = el('div', 'controls');
const stop = button('stop', 'Stop', () => vscode.postMessage({ type: 'stop' }), true);
controls.append(
  button('do', 'Do', () => send('do')),
  button('say', 'Say', () => send('say'), true),
  button('story', 'Story', () => send('story'), true),
  stop,
  button('retry', 'Retry', () => vscode.postMessage({ type: 'retry' }), true),
  button('undo', 'Undo', () => vscode.postMessage({ type: 'undo' }), true),
  button('preview', 'Preview Context', () => vscode.postMessage({ type: 'preview', text: action.value }), true),
);

const contextPane = el('section', 'context');
contextPane.id = 'context';

app.append(header, transcript, errorLine, action, controls, el('vscode-divider'), contextPane);

function renderTurn(turn: TurnView): HTMLElement {
  const node = el('article', `turn ${turn.status}`);
  node.dataset.turnId = turn.id;
  const actionLine = el('div', 'action');
  actionLine.append(el('span', 'kind', turn.actionKind), el('span', 'text', turn.action));
  const narration = el('div', 'narration', turn.narration);
  const footer = el('div', 'turn-footer');
  if (turn.status !== 'complete') {
    const badge = el('vscode-badge', undefined, turn.status);
    footer.append(badge);
  }
  if (turn.error) footer.append(el('span', 'turn-error', turn.error));
  const fork = el('a', 'fork', 'Fork from here');
  fork.setAttribute('role', 'button');
  fork.tabIndex = 0;
  fork.addEventListener('click', () => vscode.postMessage({ type: 'fork', turnId: turn.id }));
  footer.append(fork);
  node.append(actionLine, narration, footer);
  return node;
}

const KNOWLEDGE_SECTIONS = new Set(['always-include', 'canon', 'reference', 'inspiration']);

function renderSection(section: ContextSectionView): HTMLElement {
  const node = el('vscode-collapsible');
  node.setAttribute('title', `${section.title} — ${section.tokens}${section.budget === null ? '' : ` / ${section.budget}`} tokens`);
  node.dataset.section = section.id;
  // Knowledge sections start open: what the turn was given from the campaign is the point of this view.
  if (KNOWLEDGE_SECTIONS.has(section.id)) node.setAttribute('open', '');
  const body = el('div', 'section-body');
  for (const item of section.items) {
    const row = el('div', 'passage');
    row.append(el('div', 'passage-title', item.title), el('div', 'passage-detail', item.detail));
    body.append(row);
  }
  if (section.leftOut.length > 0) {
    body.append(el('div', 'left-out-heading', `Left out (${section.leftOut.length})`));
    for (const item of section.leftOut) {
      const row = el('div', 'passage left-out');
      row.append(el('div', 'passage-title', item.title), el('div', 'passage-detail', item.detail));
      body.append(row);
    }
  }
  body.append(el('pre', 'section-text', section.text));
  node.append(body);
  return node;
}

window.addEventListener('message', (event: MessageEvent<unknown>) => {
  const parsed = HostMessage.safeParse(event.data);
  if (!parsed.success) return;
  const message = parsed.data;
  switch (message.type) {
    case 'state':
      vscode.setState(message.panelState);
      title.textContent = message.adventure.title;
      subtitle.textContent = `${message.campaignTitle} · narrator ${message.model}${message.generating ? ' · generating…' : ''}`;
      transcript.replaceChildren(...message.turns.map(renderTurn));
      if (message.turns.length === 0) transcript.append(el('p', 'empty', 'Nothing played yet. Write an action below.'));
      stop.toggleAttribute('disabled', !message.generating);
      errorLine.textContent = '';
      break;
    case 'chunk': {
      const narration = transcript.querySelector<HTMLElement>(`article[data-turn-id="${CSS.escape(message.turnId)}"] .narration`);
      if (narration) narration.textContent += message.text;
      break;
    }
    case 'context': {
      const summary = el('div', 'context-summary', `Context: ${message.used} of ${message.total} tokens`);
      contextPane.replaceChildren(summary, ...message.warnings.map((w) => el('div', 'warning', w)), ...message.sections.map(renderSection));
      break;
    }
    case 'error':
      errorLine.textContent = message.message;
      break;
  }
});

vscode.postMessage({ type: 'ready' });
