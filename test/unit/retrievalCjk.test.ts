import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { searchKnowledge } from '../../src/knowledge/retrieval/retrieval';

/**
 * A writer's campaign notes in Chinese, Japanese and Korean, asked as a native reader would ask: in whole
 * sentences, with particles and question words, never as the exact run of characters the file holds.
 */
const FILES: Record<string, string> = {
  'zh/qingyun.md':
    '---\ntitle: 青云宗\n---\n# 青云宗\n\n青云宗是东洲最古老的修仙宗门，坐落于青云山之巅。宗主李玄风已闭关三百年，门中事务由大长老代为执掌。\n\n' +
    '## 入门考核\n\n每隔十年，宗门开山收徒。凡年满十二岁、身具灵根者皆可登山一试。考核共分三关：问心路、炼气台与剑冢。\n',
  'zh/luoxia.md':
    '---\ntitle: 落霞镇\n---\n# 落霞镇\n\n落霞镇位于青云山脚下，是凡人与修士交易的集市。镇上最有名的是王婆的药铺，专卖疗伤丹药和辟谷丹。\n\n夜里镇上常有妖兽出没，镇民天黑之后便紧闭门户，然后早早睡下，觉得这样非常安全。\n',
  'ja/kitsune.md':
    '---\ntitle: 狐の宿\n---\n# 狐の宿\n\n山あいの温泉街に、古びた宿がひっそりと建っている。女将の千代は、実は三百年を生きた狐の妖怪だという噂がある。\n\n' +
    '## 女将の秘密\n\n満月の夜になると、千代は裏山の稲荷神社へ出かけていく。旅人が後をつけても、いつの間にか見失ってしまうのだ。それから、とても静かな夜が来る。\n',
  'ja/kurogane.md':
    '---\ntitle: 黒鉄城\n---\n# 黒鉄城\n\n黒鉄城は北の国境を守る城塞で、城主の武田信繁が治めている。城下町では刀鍛冶が盛んで、毎年数えきれぬほどの刀が打たれる。\n',
  'ja/guild.md':
    '---\ntitle: 冒険者ギルド\n---\n# 冒険者ギルド\n\n王都の冒険者ギルドでは、ギルドマスターのハーゲンが新人のパーティーに依頼を割り振っている。地下ダンジョンのモンスター退治は銀貨五枚だ。\n',
  'ja/sakaba.md': '---\ntitle: 踊る子馬亭\n---\n# 踊る子馬亭\n\n酒場の踊り子たちは毎晩ダンスを披露し、楽団のメンバーがリュートを弾く。\n',
  'ko/mage.md':
    '---\ntitle: 백두산의 마법사\n---\n# 백두산의 마법사\n\n백두산 꼭대기의 오래된 탑에는 늙은 마법사가 홀로 살고 있다. 마을 사람들은 그를 두려워하지만, 마법사는 해마다 겨울이 오기 전에 약초를 나누어 준다.\n',
  'ko/village.md':
    '---\ntitle: 하늘마을\n---\n# 하늘마을\n\n하늘마을은 산기슭에 자리한 작은 마을이다. 마을 사람들은 주로 감자를 기르고 겨울에는 숯을 구워 판다.\n',
};

describe('Chinese, Japanese and Korean campaigns, asked as a native reader asks', () => {
  let store: KnowledgeStore;
  let root: string;
  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'st-cjk-'));
    fs.writeFileSync(path.join(root, 'campaign.yaml'), 'id: cjk\ntitle: CJK\ndefault_class: canon\n');
    for (const [file, text] of Object.entries(FILES)) {
      fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      fs.writeFileSync(path.join(root, file), text);
    }
    const campaign = loadCampaign(root);
    store = KnowledgeStore.open(campaign);
    await importCampaign(campaign, store);
  });
  after(() => {
    store.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('answers a question written as one unbroken sentence by the words in it', async () => {
    for (const [question, file] of [
      ['宗主是谁？', 'zh/qingyun.md'],
      ['哪里可以买丹药？', 'zh/luoxia.md'],
      ['女将の秘密は何ですか', 'ja/kitsune.md'],
      ['黒鉄城の城主は誰ですか', 'ja/kurogane.md'],
    ]) {
      const { hits } = await searchKnowledge(store, question!, { limit: 3 });
      assert.equal(hits[0]?.sourcePath, file, `${question}: ${hits.map((h) => h.sourcePath).join(', ') || 'nothing'}`);
    }
  });

  it('finds a Korean word whatever particle the question puts after it', async () => {
    for (const question of ['마법사에게 무엇을 배울 수 있나요?', '그 마법사한테 가 보자', '마법사']) {
      const { hits } = await searchKnowledge(store, question, { limit: 3 });
      assert.equal(hits[0]?.sourcePath, 'ko/mage.md', `${question}: ${hits.map((h) => h.sourcePath).join(', ') || 'nothing'}`);
    }
  });

  it('reads a katakana word whole, its long-vowel marks (ー) included', async () => {
    for (const [question, files] of [
      ['パーティー', ['ja/guild.md']],
      ['ダンジョンはどこですか', ['ja/guild.md']],
      // Not 'メン' of メンバー, nor 'ダン' of ダンス: neither is a word of the question.
      ['ラーメンはありますか', []],
      ['ダンジョン', ['ja/guild.md']],
    ] as const) {
      const { hits } = await searchKnowledge(store, question, { limit: 3 });
      assert.deepEqual(
        hits.map((h) => h.sourcePath),
        files,
        `${question}: ${hits.map((h) => `${h.sourcePath} (${h.reason})`).join(', ')}`,
      );
    }
    const { hits } = await searchKnowledge(store, 'パーティー', { limit: 1 });
    assert.match(hits[0]!.reason, /'パーティー'/);
  });

  it('says nothing to an everyday question the campaign has no answer for', async () => {
    // Nor on the everyday words a narrative is full of (然后 "and then", 觉得 "feel", それから "after that").
    for (const question of ['东京的天气怎么样？', '今日の天気はどうですか', '오늘 날씨가 어때요?', '然后呢？你觉得这样好吗？', 'それから、とてもどうなったの？']) {
      const { hits } = await searchKnowledge(store, question, { limit: 3 });
      assert.deepEqual(
        hits.map((h) => h.sourcePath),
        [],
        question,
      );
    }
  });

  it('names the words it matched and the ones the campaign lacks as they are written, not as character pairs', async () => {
    const { hits } = await searchKnowledge(store, '마법사에게 무엇을 배울 수 있나요?', { limit: 1 });
    assert.match(hits[0]!.reason, /'마법사'/);
    assert.doesNotMatch(hits[0]!.reason, /마법 법사/);
    const { record } = await searchKnowledge(store, '东京的天气怎么样？', { limit: 1 });
    assert.match(record.abstention ?? '', /'东京', '天气'/);
  });
});
