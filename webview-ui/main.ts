// The play panel. It renders what the host sends and posts what the writer asks for; every story rule
// lives in the host. All campaign and model text goes in through textContent, never as markup.
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-collapsible/index.js';
import '@vscode-elements/elements/dist/vscode-textarea/index.js';
import '@vscode-elements/elements/dist/vscode-divider/index.js';
import '@vscode-elements/elements/dist/vscode-label/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import { el, linkButton } from './dom';
import { HostMessage, WebviewState, type AdventureSetup, type ContextSectionView, type PanelState, type TurnView, type WebviewMessage, type WorldStateView } from './protocol';

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
  setState(state: unknown): void;
  getState(): unknown;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const app = document.getElementById('app')!;

function button(id: string, label: string, onClick: () => void, secondary = false): HTMLElement {
  const node = el('vscode-button');
  if (id) node.id = id;
  node.textContent = label;
  if (secondary) node.setAttribute('secondary', '');
  node.addEventListener('click', onClick);
  return node;
}

type Field = HTMLElement & { value: string };

/** A labelled text field or area; the label names it for screen readers too. */
function field(id: string, label: string, kind: 'vscode-textfield' | 'vscode-textarea', placeholder: string): { row: HTMLElement; input: Field } {
  const row = el('div', 'field');
  const caption = el('vscode-label', undefined, label);
  caption.setAttribute('for', id);
  const input = el(kind) as Field;
  input.id = id;
  input.setAttribute('placeholder', placeholder);
  if (kind === 'vscode-textarea') input.setAttribute('rows', '3');
  row.append(caption, input);
  return { row, input };
}

const header = el('header');
const title = el('h2', 'title', 'Loading…');
const subtitle = el('div', 'subtitle');
header.append(title, subtitle);

// ── story setup: persona, plot essentials, author's note ─────────────────────────────────────────

const saved = WebviewState.safeParse(vscode.getState());
let panelState: PanelState | undefined = saved.success ? { campaignRoot: saved.data.campaignRoot, adventureId: saved.data.adventureId } : undefined;
/** Edits not saved yet survive a reload of the webview; the host only ever hears of them on Save. */
let setupDraft: AdventureSetup | undefined = saved.success ? saved.data.setupDraft : undefined;
/** The setup as last stored by the host, which Revert goes back to. */
let savedSetup: AdventureSetup | undefined;

const setup = el('vscode-collapsible');
setup.id = 'setup';
setup.setAttribute('title', 'Story setup');
const setupBody = el('div', 'setup-body');
const personaName = field('persona-name', 'Name', 'vscode-textfield', 'Who the writer plays, e.g. Kaelen');
const personaPronouns = field('persona-pronouns', 'Pronouns', 'vscode-textfield', 'e.g. she/her');
const personaDescription = field('persona-description', 'Description', 'vscode-textarea', 'Who they are, what they carry, what they want');
const plotEssentials = field('plot-essentials', 'Plot essentials', 'vscode-textarea', 'What the narrator must always keep in mind');
const authorsNote = field('authors-note', "Author's note", 'vscode-textarea', 'Tone and direction for the next replies');
const setupStatus = el('span', 'setup-status');
setupStatus.id = 'setup-status';
setupStatus.setAttribute('role', 'status');
const personaRow = el('div', 'persona-row');
personaRow.append(personaName.row, personaPronouns.row);

function readSetup(): AdventureSetup {
  return {
    persona: { name: personaName.input.value, pronouns: personaPronouns.input.value, description: personaDescription.input.value },
    plotEssentials: plotEssentials.input.value,
    authorsNote: authorsNote.input.value,
  };
}

function showSetup(value: AdventureSetup): void {
  personaName.input.value = value.persona.name;
  personaPronouns.input.value = value.persona.pronouns;
  personaDescription.input.value = value.persona.description;
  plotEssentials.input.value = value.plotEssentials;
  authorsNote.input.value = value.authorsNote;
}

function saveWebviewState(): void {
  if (panelState) vscode.setState({ ...panelState, ...(setupDraft ? { setupDraft } : {}) } satisfies WebviewState);
}

for (const { input } of [personaName, personaPronouns, personaDescription, plotEssentials, authorsNote]) {
  input.addEventListener('input', () => {
    setupDraft = readSetup();
    setupStatus.textContent = 'Unsaved changes';
    saveWebviewState();
  });
}
const setupActions = el('div', 'controls');
setupActions.append(
  button('save-setup', 'Save', () => vscode.postMessage({ type: 'saveSetup', setup: readSetup() })),
  button('revert-setup', 'Revert', () => {
    setupDraft = undefined;
    setupStatus.textContent = '';
    saveWebviewState();
    if (savedSetup) showSetup(savedSetup);
  }, true),
  setupStatus,
);
setupBody.append(personaRow, personaDescription.row, plotEssentials.row, authorsNote.row, setupActions);
setup.append(setupBody);
if (setupDraft) {
  showSetup(setupDraft);
  setupStatus.textContent = 'Unsaved changes';
  setup.setAttribute('open', '');
}

// ── world state of the head turn ─────────────────────────────────────────────────────────────────

const worldState = el('section', 'world-state');
worldState.id = 'world-state';
worldState.setAttribute('aria-label', 'World state');

function renderWorldState(view: WorldStateView): void {
  const heading = el('h3', 'pane-heading', 'World state');
  if (!view.tracked) {
    worldState.replaceChildren(heading, el('p', 'empty', 'This adventure tracks no world state.'));
    return;
  }
  const list = el('ul', 'state-lines');
  list.append(...view.lines.map((line) => el('li', undefined, line)));
  worldState.replaceChildren(heading, list);
  if (view.changes.length > 0) worldState.append(el('div', 'state-changes', `Changed last turn: ${view.changes.join(', ')}`));
  if (view.refusals.length > 0) {
    const refused = el('ul', 'state-refusals');
    refused.append(...view.refusals.map((r) => el('li', undefined, r)));
    worldState.append(el('div', 'refusals-heading', 'Refused last turn'), refused);
  }
}

const transcript = el('section', 'transcript');
transcript.id = 'transcript';
transcript.setAttribute('aria-label', 'Story so far');
transcript.setAttribute('aria-live', 'polite');
const errorLine = el('div', 'error');
errorLine.id = 'error';
errorLine.setAttribute('role', 'alert');
const noticeLine = el('div', 'notice');
noticeLine.id = 'notice';
noticeLine.setAttribute('role', 'status');

/**
 * The transcript follows the newest text unless the writer scrolled up to reread: then it stays where
 * they are until they scroll back to the end or play again.
 */
let followNewest = true;
const FOLLOW_SLACK_PX = 24;
/** Where the story last put the transcript, or where the writer played from. */
let placedAt = 0;
const atTheEnd = (): boolean => transcript.scrollTop + transcript.clientHeight >= transcript.scrollHeight - FOLLOW_SLACK_PX;
transcript.addEventListener('scroll', () => {
  followNewest = atTheEnd();
});
/**
 * Before the transcript changes: a scroll event arrives a frame late (in a busy or hidden panel, much
 * later), so a writer who has just scrolled up is read from the position itself, or the next chunk would
 * pull them back down.
 */
function noteRereading(): void {
  if (transcript.scrollTop < placedAt - FOLLOW_SLACK_PX && !atTheEnd()) followNewest = false;
}
function followTranscript(): void {
  if (!followNewest) return;
  transcript.scrollTop = transcript.scrollHeight;
  placedAt = transcript.scrollTop;
}
/** Playing again follows the story from wherever the writer is. */
function followFromHere(): void {
  followNewest = true;
  placedAt = transcript.scrollTop;
}

/** A turn is in flight: every action that would race it waits (Stop is the one that can end it). */
let generating = false;

/** What the preflight says is wrong with the model server, with the fix one click away. */
const serverLine = el('div', 'server-problem');
serverLine.id = 'server';
serverLine.hidden = true;
let subtitleParts = { campaign: '', narrator: '', generating: false };
const renderSubtitle = (): void => {
  const { campaign, narrator, generating } = subtitleParts;
  subtitle.textContent = `${campaign}${narrator ? ` · ${narrator}` : ''}${generating ? ' · generating…' : ''}`;
};

/** The shortcut as this machine writes it: the box says it, the Do button's tooltip too. */
const SEND_KEYS = /Mac|iPhone|iPad/.test(navigator.userAgent) ? 'Cmd+Enter' : 'Ctrl+Enter';
const action = el('vscode-textarea') as HTMLElement & { value: string };
action.id = 'action';
action.setAttribute('aria-label', `Your action (${SEND_KEYS} plays it as Do)`);
action.setAttribute('placeholder', `What do you do? (${SEND_KEYS} plays it)`);
action.setAttribute('rows', '3');

// The typed text stays in the box until the host says it is stored as a turn (an 'accepted' message).
const send = (kind: 'do' | 'say' | 'story'): void => {
  const text = action.value.trim();
  if (!text || generating) return;
  followFromHere();
  vscode.postMessage({ type: 'act', kind, text });
};
// Ctrl+Enter (Cmd+Enter on a Mac) plays the action as Do, with Shift as Say, with Alt as Story: keybindings the
// extension contributes (Keyboard Shortcuts lists and changes them), which reach the panel as a 'send' message.
// A plain Enter stays a new line in the box.
const controls = el('div', 'controls');
const stop = button('stop', 'Stop', () => vscode.postMessage({ type: 'stop' }), true);
const turnActions = [
  button('do', 'Do', () => send('do')),
  button('say', 'Say', () => send('say'), true),
  button('story', 'Story', () => send('story'), true),
];
const headActions = [
  button('retry', 'Retry', () => {
    followFromHere();
    vscode.postMessage({ type: 'retry' });
  }, true),
  button('undo', 'Undo', () => vscode.postMessage({ type: 'undo' }), true),
];
turnActions[0]!.title = `Do (${SEND_KEYS})`;
turnActions[1]!.title = `Say (${SEND_KEYS.replace('+Enter', '+Shift+Enter')})`;
turnActions[2]!.title = `Story (${SEND_KEYS.replace('+Enter', '+Alt+Enter')})`;
controls.append(
  ...turnActions,
  stop,
  ...headActions,
  button('preview', 'Preview Context', () => {
    contextRegion.setAttribute('open', '');
    revealContext();
    vscode.postMessage({ type: 'preview', text: action.value });
  }, true),
);

// What a turn was sent lives in its own region above the story, closed until the writer opens it.
const contextRegion = el('vscode-collapsible');
contextRegion.id = 'context-region';
contextRegion.setAttribute('title', 'Context sent to the narrator');
const contextPane = el('section', 'context');
contextPane.id = 'context';
contextPane.append(el('p', 'empty', 'Nothing sent yet.'));
contextRegion.append(contextPane);

// Setup, state and context above; the story in the middle, scrolling on its own; the action box pinned below.
const panes = el('div', 'panes');
panes.append(setup, worldState, contextRegion);

/**
 * The panes above the story scroll within a third of the panel: an opened context region is scrolled to its
 * top, else a short panel showed only its first line and none of the budget bars below it.
 */
function revealContext(): void {
  // After the region has laid out its body: before, there is nothing below it to scroll to.
  requestAnimationFrame(() => {
    panes.scrollTop = contextRegion.offsetTop - panes.offsetTop;
  });
}
contextRegion.addEventListener('vsc-collapsible-toggle', (event) => {
  if ((event as CustomEvent<{ open: boolean }>).detail.open) revealContext();
});
const composer = el('div', 'composer');
composer.append(errorLine, noticeLine, action, controls);
app.append(header, serverLine, panes, transcript, composer);

function showGenerating(running: boolean): void {
  generating = running;
  stop.toggleAttribute('disabled', !running);
  for (const node of [...turnActions, ...headActions]) node.toggleAttribute('disabled', running);
  for (const node of transcript.querySelectorAll<HTMLButtonElement>('.link-button')) node.disabled = running;
}

/** Swaps a turn's action line for an editor; replaying posts the new text, which the host plays as a sibling. */
function editAction(turn: TurnView, actionLine: HTMLElement): void {
  const editor = el('div', 'action-editor');
  const text = el('vscode-textarea', 'edit-text') as Field;
  text.setAttribute('rows', '2');
  text.setAttribute('aria-label', 'Edited action');
  text.value = turn.action;
  const buttons = el('div', 'controls');
  buttons.append(
    button('', 'Replay', () => {
      const edited = text.value.trim();
      if (edited) vscode.postMessage({ type: 'editAction', turnId: turn.id, text: edited });
    }),
    button('', 'Cancel', () => editor.replaceWith(actionLine), true),
  );
  buttons.firstElementChild!.classList.add('replay');
  editor.append(text, buttons);
  actionLine.replaceWith(editor);
  // The field renders its inner textarea a moment after it is attached; focus it once it exists.
  void customElements
    .whenDefined('vscode-textarea')
    .then(() => (text as Field & { updateComplete?: Promise<unknown> }).updateComplete)
    .then(() => text.focus());
}

/** ‹ 2 / 3 › under a reply that has siblings: flips to another reply to the same moment, in place. */
function swipes(turn: TurnView): HTMLElement | undefined {
  const { index, count, previousId, nextId } = turn.siblings;
  if (count < 2) return undefined;
  const nav = el('span', 'swipes');
  nav.setAttribute('aria-label', `Reply ${index} of ${count}`);
  const previous = linkButton('swipe-previous', '‹', () => previousId && vscode.postMessage({ type: 'switch', turnId: previousId }));
  previous.setAttribute('aria-label', 'Previous reply');
  previous.disabled = previousId === null;
  const next = linkButton('swipe-next', '›', () => nextId && vscode.postMessage({ type: 'switch', turnId: nextId }));
  next.setAttribute('aria-label', 'Next reply');
  next.disabled = nextId === null;
  const remove = linkButton('swipe-delete', 'Delete this reply', () => vscode.postMessage({ type: 'deleteReply', turnId: turn.id }));
  remove.setAttribute('aria-label', `Delete reply ${index} of ${count} and what followed it`);
  nav.append(previous, el('span', 'swipe-position', `${index} / ${count}`), next, remove);
  return nav;
}

function renderTurn(turn: TurnView): HTMLElement {
  const node = el('article', `turn ${turn.status}`);
  node.dataset.turnId = turn.id;
  const actionLine = el('div', 'action');
  actionLine.append(el('span', 'number', `${turn.number}.`), el('span', 'kind', turn.actionKind), el('span', 'text', turn.action));
  const narration = el('div', 'narration', turn.narration);
  const footer = el('div', 'turn-footer');
  if (turn.status !== 'complete') {
    const badge = el('vscode-badge', undefined, turn.status);
    footer.append(badge);
  }
  if (turn.error) footer.append(el('span', 'turn-error', turn.error));
  const nav = swipes(turn);
  if (nav) footer.append(nav);
  footer.append(
    linkButton('edit', 'Edit action', () => editAction(turn, actionLine)),
    linkButton('fork', 'Fork from here', () => vscode.postMessage({ type: 'fork', turnId: turn.id })),
  );
  node.append(actionLine, narration, footer);
  return node;
}

const KNOWLEDGE_SECTIONS = new Set(['always-include', 'canon', 'reference', 'inspiration']);

const cost = (tokens: number, budget: number | null): string => `${tokens}${budget === null ? '' : ` / ${budget}`} tokens`;

/**
 * One stacked bar per section, each on its own scale: what it used item by item (hover names each), the
 * room it had left, and beside it what was left out. A row is a button: it opens the section's details.
 */
function renderBudget(sections: readonly ContextSectionView[]): HTMLElement {
  const list = el('div', 'budget');
  list.id = 'budget';
  list.setAttribute('aria-label', 'Budget by section');
  for (const section of sections) {
    const { bar } = section;
    const row = el('button', 'budget-row');
    row.type = 'button';
    row.dataset.section = section.id;
    const left = section.leftOut.length;
    const over = bar.budget !== null && bar.used > bar.budget;
    const said = `${section.label}: ${cost(bar.used, bar.budget)}${bar.budget === null ? ', required' : ''}${over ? ', over budget' : ''}, ${section.items.length} used${left > 0 ? `, ${left} left out` : ''}`;
    row.setAttribute('aria-label', said);
    row.title = said;
    const track = el('span', 'budget-track');
    track.setAttribute('aria-hidden', 'true');
    for (const segment of bar.segments) {
      const part = el('span', `segment ${segment.kind}`);
      // Through the CSSOM, which the content security policy allows (no inline style attribute).
      part.style.width = `${(100 * segment.tokens) / bar.scale}%`;
      part.title = `${segment.kind === 'left-out' ? 'Left out: ' : ''}${segment.title} — ${segment.tokens} tokens${segment.detail ? `\n${segment.detail}` : ''}`;
      track.append(part);
    }
    if (bar.budget !== null && bar.budget < bar.scale) {
      const mark = el('span', 'budget-mark');
      mark.style.left = `${(100 * bar.budget) / bar.scale}%`;
      track.append(mark);
    }
    const figures = el('span', `budget-figures${over ? ' over' : ''}`, bar.budget === null ? `${bar.used} · required` : cost(bar.used, bar.budget));
    const leftNote = el('span', 'budget-left', left > 0 ? `${left} left out` : '');
    row.append(el('span', 'budget-label', section.label), track, figures, leftNote);
    row.addEventListener('click', () => {
      const details = contextPane.querySelector<HTMLElement>(`vscode-collapsible[data-section="${CSS.escape(section.id)}"]`);
      details?.setAttribute('open', '');
      details?.scrollIntoView({ block: 'nearest' });
    });
    list.append(row);
  }
  return list;
}

function renderSection(section: ContextSectionView): HTMLElement {
  const node = el('vscode-collapsible');
  node.setAttribute('title', `${section.label} — ${cost(section.tokens, section.budget)}${section.note ? ` · ${section.note}` : ''}`);
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
    case 'state': {
      panelState = message.panelState;
      saveWebviewState();
      title.textContent = message.adventure.title;
      const { name, pronouns } = message.setup.persona;
      const playing = name ? ` · playing ${name}${pronouns ? ` (${pronouns})` : ''}` : '';
      subtitleParts = { campaign: `${message.campaignTitle}${playing}`, narrator: subtitleParts.narrator || `narrator ${message.model}`, generating: message.generating };
      renderSubtitle();
      savedSetup = message.setup;
      if (!setupDraft) showSetup(message.setup);
      renderWorldState(message.worldState);
      noteRereading();
      transcript.replaceChildren(...message.turns.map(renderTurn));
      if (message.turns.length === 0) transcript.append(el('p', 'empty', 'Nothing played yet. Write an action below.'));
      showGenerating(message.generating);
      errorLine.textContent = '';
      followTranscript();
      break;
    }
    case 'accepted':
      // Cleared only if the writer has not started typing something else meanwhile.
      if (action.value.trim() === message.text) action.value = '';
      noticeLine.textContent = '';
      break;
    case 'notice': {
      noticeLine.textContent = message.message;
      const offer = message.offer;
      if (offer) noticeLine.append(' ', linkButton('notice-offer', offer.label, () => vscode.postMessage({ type: 'takeOffer', id: offer.id })));
      break;
    }
    case 'send':
      send(message.kind);
      break;
    case 'setupSaved':
      setupDraft = undefined;
      saveWebviewState();
      setupStatus.textContent = 'Saved: the next turn uses it.';
      break;
    case 'chunk': {
      const narration = transcript.querySelector<HTMLElement>(`article[data-turn-id="${CSS.escape(message.turnId)}"] .narration`);
      noteRereading();
      if (narration) narration.textContent += message.text;
      followTranscript();
      break;
    }
    case 'context': {
      if (message.sections.length === 0) {
        contextPane.replaceChildren(el('p', 'empty', 'Nothing sent yet.'));
        break;
      }
      const summary = message.total === null ? `Context sent with this turn: ${message.used} tokens` : `Context: ${message.used} of ${message.total} tokens`;
      // Research and World Info: a headline, then one line a step or an entry.
      const lines = (cls: string, text: readonly string[]): HTMLElement[] => {
        if (text.length === 0) return [];
        const block = el('div', cls);
        block.replaceChildren(...text.map((line) => el('div', `${cls}-line`, line)));
        return [block];
      };
      contextPane.replaceChildren(
        el('div', 'context-summary', summary),
        ...message.warnings.map((w) => el('div', 'warning', w)),
        ...lines('research', message.research),
        ...lines('world-info', message.worldInfo),
        renderBudget(message.sections),
        ...message.sections.map(renderSection),
      );
      break;
    }
    case 'reveal': {
      const turn = transcript.querySelector<HTMLElement>(`article[data-turn-id="${CSS.escape(message.turnId)}"]`);
      if (!turn) break;
      // The writer is reading this turn now: new text must not pull the story away from it.
      followNewest = false;
      for (const marked of transcript.querySelectorAll('article.revealed')) marked.classList.remove('revealed');
      turn.classList.add('revealed');
      turn.scrollIntoView({ block: 'center' });
      placedAt = transcript.scrollTop;
      break;
    }
    case 'error':
      errorLine.textContent = message.message;
      break;
    case 'server':
      subtitleParts.narrator = message.narrator;
      renderSubtitle();
      serverLine.hidden = message.problem === null;
      serverLine.replaceChildren();
      if (message.problem !== null) serverLine.append(el('span', undefined, message.problem), linkButton('fix-server', 'Fix…', () => vscode.postMessage({ type: 'fixServer' })));
      break;
  }
});

vscode.postMessage({ type: 'ready' });
