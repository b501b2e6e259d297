import assert from 'node:assert/strict';
import { splitFrontMatter, withFrontMatterField } from '../../src/knowledge/campaign/frontMatter';

describe('knowledge: front matter', () => {
  it('reads every known field and says where the body starts', () => {
    const text = '---\nclass: Canon\nenabled: false\nvisibility: hidden\nalways_include: true\npriority: high\ntags: town\nentities: [Mara, Ilse]\ntitle: 1984\nnotes: keep\nscope: initial\n---\n# Body\n';
    const split = splitFrontMatter(text);
    assert.deepEqual(split.issues, []);
    assert.deepEqual(split.meta, {
      class: 'canon',
      enabled: false,
      visibility: 'hidden',
      always_include: true,
      priority: 'high',
      tags: ['town'],
      entities: ['Mara', 'Ilse'],
      title: '1984',
      notes: 'keep',
      scope: 'initial',
    });
    assert.equal(split.body, '# Body\n');
    assert.equal(split.bodyStartLine, 13);
  });

  it('reports an unknown class as an error on its line, never a silent default', () => {
    const split = splitFrontMatter('---\ntitle: X\nclass: lore\n---\ntext');
    assert.equal(split.meta.class, undefined);
    assert.equal(split.issues.length, 1);
    assert.equal(split.issues[0]!.severity, 'error');
    assert.equal(split.issues[0]!.line, 3);
    assert.match(split.issues[0]!.message, /'class' is 'lore': must be one of canon, reference, inspiration/);
  });

  it('reports YAML that does not parse, with a line in the file', () => {
    const split = splitFrontMatter('---\ntitle: "unterminated\nclass: canon\n---\ntext');
    assert.equal(split.issues[0]?.code, 'front-matter-yaml');
    assert.match(split.issues[0]!.message, /not valid YAML/);
    assert.ok(split.issues[0]!.line! >= 2);
  });

  it('reports front matter that is a list, or never closed', () => {
    assert.equal(splitFrontMatter('---\n- a\n- b\n---\nx').issues[0]?.code, 'front-matter-shape');
    const unclosed = splitFrontMatter('---\nclass: canon\n# Heading\n');
    assert.equal(unclosed.issues[0]?.code, 'front-matter-unclosed');
    assert.equal(unclosed.issues[0]?.line, 1);
  });

  it('leaves other tools\' keys alone but flags a likely typo', () => {
    const split = splitFrontMatter('---\nlayout: post\nclas: canon\n---\n');
    assert.deepEqual(split.issues.map((i) => [i.severity, i.line, i.message]), [['warning', 3, "unknown front matter key 'clas' is ignored; did you mean 'class'?"]]);
  });

  it('treats a file without front matter as all body, and handles CRLF', () => {
    assert.deepEqual(splitFrontMatter('# Just text\n'), { meta: {}, body: '# Just text\n', bodyStartLine: 1, present: false, issues: [] });
    const crlf = splitFrontMatter('---\r\nclass: reference\r\n---\r\nBody\r\n');
    assert.equal(crlf.meta.class, 'reference');
    assert.equal(crlf.body, 'Body\r\n');
    assert.equal(crlf.bodyStartLine, 4);
  });

  describe('editing one field', () => {
    it('replaces an existing value and keeps every other byte', () => {
      const text = '---\ntitle:   Mara  # the healer\nenabled: true\ntags: [a, b]\n---\n\nBody  with  spacing\n';
      assert.equal(withFrontMatterField(text, 'enabled', false), text.replace('enabled: true', 'enabled: false'));
    });

    it('adds a missing key before the closing fence, keeping CRLF line ends', () => {
      const text = '---\r\ntitle: X\r\n---\r\nBody\r\n';
      assert.equal(withFrontMatterField(text, 'enabled', false), '---\r\ntitle: X\r\nenabled: false\r\n---\r\nBody\r\n');
    });

    it('creates front matter when the file has none', () => {
      assert.equal(withFrontMatterField('# Mara\n', 'enabled', false), '---\nenabled: false\n---\n# Mara\n');
    });

    it('round-trips through the parser', () => {
      const edited = withFrontMatterField('---\nclass: canon\n---\nx', 'enabled', false);
      assert.equal(splitFrontMatter(edited).meta.enabled, false);
      assert.equal(splitFrontMatter(withFrontMatterField(edited, 'enabled', true)).meta.enabled, true);
      assert.equal(splitFrontMatter(withFrontMatterField('x', 'title', 'A: colon')).meta.title, 'A: colon');
    });

    it('refuses to edit front matter that is broken rather than guessing', () => {
      assert.throws(() => withFrontMatterField('---\ntitle: [x\n---\n', 'enabled', false), /not valid YAML/);
    });
  });
});
