import assert from 'node:assert/strict';
import { MAX_PASSAGE_TOKENS, MIN_PASSAGE_TOKENS, parseDocument, passageLabel } from '../../src/knowledge/indexing/chunker';
import { estimateTokens } from '../../src/knowledge/campaign/tokens';

const words = (n: number, word = 'lorem'): string => Array.from({ length: n }, (_, i) => `${word}${i}`).join(' ');

describe('knowledge: markdown to passages', () => {
  it('gives each section its own passage with the heading trail, and lines of the file', () => {
    const text = ['---', 'class: canon', '---', '# Westhaven', '', words(80), '', '## The Watch', '', words(90), ''].join('\n');
    const { passages, firstHeading } = parseDocument(text, 'markdown');
    assert.equal(firstHeading, 'Westhaven');
    assert.deepEqual(passages.map((p) => p.headingPath), [['Westhaven'], ['Westhaven', 'The Watch']]);
    assert.deepEqual(passages.map((p) => [p.startLine, p.endLine]), [[6, 6], [10, 10]]);
    assert.ok(!passages.some((p) => p.text.includes('class: canon')), 'front matter is not passage text');
  });

  it('runs through headings below the minimum, writing the headings it crosses into the text', () => {
    const text = '# Spells\n\n## Aid\n\nHit points rise.\n\n## Alarm\n\nA bell rings.\n\n## Blur\n\nYou shimmer.\n';
    const { passages } = parseDocument(text, 'markdown');
    assert.equal(passages.length, 1);
    // Headed by what the three sections share, never by the first of them alone; each keeps its heading in the text.
    assert.deepEqual(passages[0]!.headingPath, ['Spells']);
    assert.match(passages[0]!.text, /^## Aid\n\nHit points rise\.\n\n## Alarm\n\nA bell rings\.\n\n## Blur\n\nYou shimmer\.$/);
    assert.deepEqual([passages[0]!.startLine, passages[0]!.endLine], [3, 13]);
    assert.equal(passageLabel(passages[0]!), 'Aid', 'listed by the section it opens with');
  });

  it('names each passage in a list by its own heading, and text above every heading as such', () => {
    const text = `Preface words.\n\n# Westhaven\n\n${words(80)}\n\n## The Watch\n\n${words(90)}\n`;
    assert.deepEqual(parseDocument(text, 'markdown').passages.map(passageLabel), ['(before the first heading)', 'The Watch']);
  });

  it("heads a character's main paragraph by her page, not by the front-matter field above it (Torys's Ahahbu)", () => {
    const text = `---\ntitle: Ahahbu\nlayout: character\nmotives:\n  'Ahahbu has a dark secret; she is a druid of the Eclipse.'\n---\n\nAhahbu is the healer of Day's End.\n\n## Her house\n\n${words(80)}\n`;
    const { passages } = parseDocument(text, 'markdown');
    const main = passages.find((p) => p.text.includes('Ahahbu is the healer'))!;
    assert.deepEqual([main.headingPath, passageLabel(main), main.startLine], [[], '(before the first heading)', 8]);
    assert.ok(!main.text.includes('dark secret'), 'the motives field is a passage of its own');
    assert.deepEqual(passages.find((p) => p.text.includes('dark secret'))!.headingPath, ['Motives']);
  });

  it('keeps the trail of a passage whose short text runs on into its own subsections', () => {
    const text = '# Paladin\n\n## Class Features\n\nYou gain these.\n\n### Hit Points\n\nHit dice: 1d10.\n';
    const { passages } = parseDocument(text, 'markdown');
    assert.deepEqual(passages.map((p) => [p.headingPath, p.startLine]), [[['Paladin', 'Class Features'], 5]]);
    assert.match(passages[0]!.text, /^You gain these\.\n\n### Hit Points\n\nHit dice: 1d10\.$/);
  });

  it('heads a passage that started mid-section and runs into the next one by the trail they share, adding no heading above its first line', () => {
    // One paragraph just under the ceiling: the line after it cannot join, and starts a passage mid-section.
    let long = '';
    for (let i = 0; estimateTokens(`${long} Sentence ${i} of the long section.`) <= MAX_PASSAGE_TOKENS; i++) long = `${long} Sentence ${i} of the long section.`.trim();
    const text = `# Book\n\n## Long\n\n${long}\n\nA short closing line.\n\n## Next\n\nThe next section.\n`;
    const { passages } = parseDocument(text, 'markdown');
    const last = passages.at(-1)!;
    assert.deepEqual(last.headingPath, ['Book']);
    assert.match(last.text, /^A short closing line\.\n\n## Next\n\nThe next section\.$/);
    assert.equal(last.startLine, 7);
  });

  it('never overlaps: every word of the body appears in exactly one passage', () => {
    const body = Array.from({ length: 30 }, (_, i) => `## Section ${i}\n\n${words(40 + i * 7, `w${i}x`)}`).join('\n\n');
    const { passages } = parseDocument(`# Doc\n\n${body}\n`, 'markdown');
    const all = passages.map((p) => p.text).join(' ').split(/\s+/).filter((w) => /^w\d+x\d+$/.test(w));
    assert.equal(new Set(all).size, all.length);
    assert.equal(all.length, Array.from({ length: 30 }, (_, i) => 40 + i * 7).reduce((a, b) => a + b, 0));
  });

  it('splits one giant paragraph at sentences, every passage under the ceiling', () => {
    const sentence = (i: number): string => `Sentence number ${i} tells of the abbey and the river road.`;
    const text = Array.from({ length: 3000 }, (_, i) => sentence(i)).join(' ');
    const { passages } = parseDocument(text, 'markdown');
    assert.ok(passages.length > 10);
    for (const p of passages) {
      assert.ok(p.tokenCount <= MAX_PASSAGE_TOKENS, `passage of ${p.tokenCount} tokens`);
      assert.match(p.text, /^Sentence number \d+ .*road\.$/s, 'cut at a sentence boundary');
    }
    assert.equal(passages.map((p) => p.text).join(' '), text);
  });

  it('cuts a run of text with no sentence ends or spaces by words, then characters', () => {
    for (const text of [words(5000), 'x'.repeat(20000)]) {
      const { passages } = parseDocument(text, 'text');
      assert.ok(passages.length > 1);
      for (const p of passages) assert.ok(estimateTokens(p.text) <= MAX_PASSAGE_TOKENS);
      assert.equal(passages.map((p) => p.text).join('').replace(/\s/g, ''), text.replace(/\s/g, ''));
    }
  });

  it('packs 10k tiny headings into passages above the minimum', () => {
    const text = Array.from({ length: 10000 }, (_, i) => `## Entry ${i}\n\nShort fact ${i}.`).join('\n\n');
    const { passages } = parseDocument(text, 'markdown');
    assert.ok(passages.length < 2000, `${passages.length} passages`);
    for (const p of passages.slice(0, -1)) assert.ok(p.tokenCount >= MIN_PASSAGE_TOKENS && p.tokenCount <= MAX_PASSAGE_TOKENS);
    assert.ok(passages.at(-1)!.text.includes('Short fact 9999.'));
  });

  it('keeps headings inside blockquotes as structure', () => {
    const text = `# Monsters\n\n${words(70)}\n\n> ## Aboleth\n>\n> ${words(70, 'tentacle')}\n`;
    const { passages } = parseDocument(text, 'markdown');
    assert.deepEqual(passages.at(-1)!.headingPath, ['Monsters', 'Aboleth']);
    assert.match(passages.at(-1)!.text, /^tentacle0/);
    assert.equal(passages.at(-1)!.startLine, 7);
  });

  it('keeps links as their words, images and HTML as inert text, code as text', () => {
    const text = [
      '# Notes',
      '',
      'See [the map](https://tracker.example/pixel.png) and ![a red door](http://evil.example/door.png).',
      '',
      '<script>alert("x")</script>',
      '',
      '```js',
      'const door = "bronze";',
      '```',
      '',
      '[ref]: https://example.com/ref',
    ].join('\n');
    const [passage] = parseDocument(text, 'markdown').passages;
    assert.ok(passage);
    assert.ok(passage.text.includes('See the map and [image: a red door].'));
    assert.ok(!/https?:/.test(passage.text.replace('<script>alert("x")</script>', '')), 'no URL survives outside the inert HTML');
    assert.ok(passage.text.includes('<script>alert("x")</script>'), 'HTML kept as text, not interpreted');
    assert.ok(passage.text.includes('const door = "bronze";'));
  });

  it('reads a paragraph with no inline markup as one with it: line breaks kept, the spaces around them dropped', () => {
    // The second paragraph differs only by markup, which markdown-it's inline parser removes.
    const text = ['# Tides', '', 'The tide turns   ', '\t at dusk;  ', 'boats wait\t', 'for it.', '', 'The *tide* turns   ', '\t at dusk;  ', 'boats wait\t', 'for it\\.'].join('\n');
    const [passage] = parseDocument(text, 'markdown').passages;
    const plain = 'The tide turns\nat dusk;\nboats wait\t\nfor it.';
    assert.equal(passage?.text, `${plain}\n\n${plain}`);
  });

  it('links by reference: a definition anywhere in the file gives the link its words, not its URL', () => {
    const [passage] = parseDocument('# Maps\n\nSee [the old map][m] first.\n\n[m]: https://example.com/map\n', 'markdown').passages;
    assert.equal(passage?.text, 'See the old map first.');
  });

  it('renders tables and lists as lines of text', () => {
    const text = '| STR | DEX |\n|---|---|\n| 21 | 9 |\n\n- one\n- two\n';
    const [passage] = parseDocument(text, 'markdown').passages;
    assert.equal(passage?.text, '| STR | DEX |\n| 21 | 9 |\n\n- one\n- two');
  });

  it('treats .txt as paragraphs, with no markup interpreted', () => {
    const { passages } = parseDocument('# not a heading\n\nsecond *para*\n', 'text');
    assert.deepEqual(passages.map((p) => [p.headingPath, p.text, p.startLine, p.endLine]), [[[], '# not a heading\n\nsecond *para*', 1, 3]]);
  });

  it('is deterministic and hashes passage text', () => {
    const text = `# A\n\n${words(200)}`;
    assert.deepEqual(parseDocument(text, 'markdown'), parseDocument(text, 'markdown'));
    assert.match(parseDocument(text, 'markdown').passages[0]!.contentHash, /^[0-9a-f]{64}$/);
  });

  describe('what a writer sees: passages point at the lines they came from', () => {
    /** The file's line `n` (1-based), as an editor numbers it. */
    const lineOf = (text: string, n: number): string => text.split(/\r\n?|\n/)[n - 1] ?? '';

    it('points each passage of a long table at the row it starts with and the row it ends with', () => {
      const rows = Array.from({ length: 120 }, (_, i) => `| Goblin ${i} | ${words(12, `g${i}x`)} |`);
      const text = ['---', 'class: reference', '---', '# Bestiary', '', '| Name | Notes |', '|---|---|', ...rows, ''].join('\n');
      const { passages } = parseDocument(text, 'markdown');
      assert.ok(passages.length > 2, `${passages.length} passages`);
      for (const p of passages) {
        const first = /^\| ([^|]+?) \|/.exec(p.text)![1]!;
        const last = /\| ([^|]+?) \|[^\n]*$/.exec(p.text)![1]!;
        assert.ok(lineOf(text, p.startLine).includes(`| ${first} |`), `line ${p.startLine} is not the row of ${first}`);
        assert.ok(lineOf(text, p.endLine).includes(`| ${last} |`), `line ${p.endLine} is not the row of ${last}`);
        assert.deepEqual(p.headingPath, ['Bestiary']);
      }
    });

    it('points each passage of a long list at the item it starts with, nested items and continuations included', () => {
      const items = Array.from({ length: 40 }, (_, i) => `- Rumour ${i}: ${words(30, `r${i}x`)}\n\n  More on rumour ${i}.\n  - aside ${i}`);
      const text = `# Rumours\n\n${items.join('\n')}\n`;
      const { passages } = parseDocument(text, 'markdown');
      assert.ok(passages.length > 1);
      for (const p of passages) {
        const first = /^- (Rumour \d+):/.exec(p.text)![1]!;
        assert.ok(lineOf(text, p.startLine).startsWith(`- ${first}:`), `line ${p.startLine}: ${lineOf(text, p.startLine)}`);
        const lastAside = [...p.text.matchAll(/- aside \d+/g)].at(-1)![0];
        assert.equal(lineOf(text, p.endLine).trim(), lastAside);
      }
    });

    it('numbers lines after front matter as the file does, front matter text at its own lines', () => {
      const text = ['---', 'title: The Abbey', 'description: |', `  ${words(20, 'bell')}`, '', `  ${words(20, 'crypt')}`, 'class: canon', '---', '', '# The Abbey', '', words(70, 'gate'), ''].join('\n');
      const { passages } = parseDocument(text, 'markdown');
      const at = (word: string) => passages.find((p) => p.text.includes(word))!;
      assert.deepEqual([at('bell0').startLine, at('bell0').endLine], [4, 6], 'the description, from its first to its last line');
      assert.deepEqual([at('gate0').startLine, at('gate0').endLine, at('gate0').headingPath], [12, 12, ['The Abbey']]);
    });

    it('is not fooled by a # inside a code fence: no heading, and the lines after it stay right', () => {
      const text = ['# Spells', '', '```sh', '# not a heading', 'cast --fire', '```', '', words(70, 'spark'), '', '## Aid', '', words(70, 'aid'), ''].join('\n');
      const { passages } = parseDocument(text, 'markdown');
      assert.ok(!passages.some((p) => p.headingPath.includes('not a heading')));
      assert.deepEqual(passages.map((p) => [p.headingPath, p.startLine, p.endLine]), [[['Spells'], 3, 8], [['Spells', 'Aid'], 12, 12]]);
      assert.match(passages[0]!.text, /^# not a heading\ncast --fire\n\nspark0/);
    });

    it('reads a CRLF file exactly as the same file with LF, and keeps no CR in the text', () => {
      const lf = ['---', 'class: canon', '---', '# Town', '', `${words(40, 'a')}`, `${words(40, 'b')}`, '', '| x | y |', '|---|---|', '| 1 | 2 |', '', '- one', '- two', '', '## Watch', '', words(80, 'w'), ''].join('\n');
      const crlf = lf.replace(/\n/g, '\r\n');
      const fromCrlf = parseDocument(crlf, 'markdown');
      assert.deepEqual(fromCrlf, parseDocument(lf, 'markdown'));
      assert.ok(!fromCrlf.passages.some((p) => p.text.includes('\r')));
    });

    it('takes headings as the trail whatever level they start at, setext headings included', () => {
      const text = ['### Deep', '', words(70, 'd'), '', '## Middle', '', words(70, 'm'), '', 'Top', '===', '', words(70, 't'), '', 'Under', '-----', '', words(70, 'u'), ''].join('\n');
      const { passages, firstHeading } = parseDocument(text, 'markdown');
      assert.equal(firstHeading, 'Top');
      assert.deepEqual(passages.map((p) => [p.headingPath, p.startLine]), [[['Deep'], 3], [['Middle'], 7], [['Top'], 12], [['Top', 'Under'], 17]]);
    });

    it('keeps HTML blocks as inert text as written: markup inside them is not structure, and headings after them are', () => {
      const html = ['<div class="map">', '# not a heading', '<img src="http://tracker.example/p.png" onerror="alert(1)">', '</div>'];
      const text = ['# Map', '', words(70, 'm'), '', ...html, '', '# Real', '', words(70, 'r'), ''].join('\n');
      const { passages } = parseDocument(text, 'markdown');
      assert.deepEqual(passages.map((p) => [p.headingPath, p.startLine, p.endLine]), [[['Map'], 3, 8], [['Real'], 12, 12]]);
      assert.equal(passages[0]!.text, `${words(70, 'm')}\n\n${html.join('\n')}`);
    });

    it('keeps every word of containers nested past what markdown-it reads, at their lines', () => {
      const deep = `${'>'.repeat(1500)} the deepest vault`;
      const text = ['---', 'class: canon', '---', '# Vaults', '', deep, '', words(70, 'after'), ''].join('\n');
      const { passages } = parseDocument(text, 'markdown');
      const vault = passages.find((p) => p.text.includes('the deepest vault'));
      assert.ok(vault, 'the nested text is indexed');
      const after = passages.find((p) => p.text.includes('after0'))!;
      assert.ok(vault.startLine <= 6 && vault.endLine >= 6 && after.startLine <= 8 && after.endLine === 8, 'at the lines of the file');
      assert.ok(!passages.some((p) => p.text.includes('class: canon')), 'front matter stays out');
    });

    it('splits a 5 MB single-line file into passages under the ceiling, all on line 1, losing no word', () => {
      const sentence = (i: number): string => `The river road number ${i} runs past the ${i % 10 ? 'abbey' : '**abbey**'} gate.`;
      const parts: string[] = [];
      for (let size = 0, i = 0; size < 5 * 1024 * 1024; i++) size += parts[parts.push(sentence(i)) - 1]!.length + 1;
      const text = parts.join(' ');
      const { passages } = parseDocument(text, 'markdown');
      assert.ok(passages.length > 1000);
      for (const p of passages) {
        assert.ok(p.tokenCount <= MAX_PASSAGE_TOKENS);
        assert.deepEqual([p.startLine, p.endLine], [1, 1]);
      }
      assert.equal(passages.map((p) => p.text).join(' '), text.replace(/\*\*/g, ''));
    });

    it('keeps table rows with the cells they were written with, and footnotes and task boxes as written', () => {
      const text = ['| Name | Armor |', '|---|---|', '| Orc | 13 | hide, shield |', '| Bandit |', '', '- [x] rescued the miller', '- [ ] found the bell', '', 'Only in the old deck.[^1]', '', '[^1]: Ibid.', ''].join('\n');
      const [passage] = parseDocument(text, 'markdown').passages;
      assert.equal(
        passage?.text,
        '| Name | Armor |\n| Orc | 13 | hide, shield |\n| Bandit |\n\n- [x] rescued the miller\n- [ ] found the bell\n\nOnly in the old deck.[^1]\n\n[^1]: Ibid.',
      );
    });
  });
});
