import assert from 'node:assert/strict';
import { MAX_PASSAGE_TOKENS, MIN_PASSAGE_TOKENS, parseDocument } from '../../src/knowledge/indexing/chunker';
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
    assert.deepEqual(passages[0]!.headingPath, ['Spells', 'Aid']);
    assert.match(passages[0]!.text, /Hit points rise\.\n\n## Alarm\n\nA bell rings\.\n\n## Blur\n\nYou shimmer\./);
    assert.deepEqual([passages[0]!.startLine, passages[0]!.endLine], [5, 13]);
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
});
