// Cross-partition queries as the official JavaScript SDK (@azure/cosmos) runs them: it sends every
// query first without a partition key range; the gateway serves filters and projections itself
// across all physical partitions, and answers ORDER BY, aggregates, TOP and OFFSET LIMIT with
// 400 / sub-status 1004 and the query plan, after which the SDK fans the plan's rewritten query out
// per partition key range and merges.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startEmulator } from "../emulator.mjs";

const count = 41;
let emulator;
let client;
let container;
let items;

before(async () => {
  emulator = await startEmulator({ partitions: 4 });
  client = emulator.client();
  const { database } = await client.databases.createIfNotExists({ id: "conformance" });
  ({ container } = await database.containers.createIfNotExists({ id: "queries", partitionKey: { paths: ["/ownerId"] } }));
  items = Array.from({ length: count }, (_, i) => ({ id: `q-${String(i).padStart(2, "0")}`, ownerId: `owner-${i % 13}`, n: i, weight: (i * 7) % 10, colour: ["red", "green", "blue"][i % 3] }));
  for (const item of items) {
    await container.items.create(item);
  }
  const { resources: ranges } = await container.readPartitionKeyRanges().fetchAll();
  assert.equal(ranges.length, 4);
});

after(async () => {
  client?.dispose();
  await emulator?.stop();
});

async function drain(iterator) {
  const results = [];
  const pages = [];
  while (iterator.hasMoreResults()) {
    const page = await iterator.fetchNext();
    pages.push(page);
    // The SDK hands back a page without resources when its DISTINCT filter dropped every row of it.
    results.push(...(page.resources ?? []));
  }
  return { results, pages };
}

async function queriesSince(sequence) {
  return (await emulator.requests(sequence)).filter((r) => r.operation === "Query" || r.operation === "QueryPlan");
}

test("a filter without a partition key is served by the gateway across all partitions, page by page", { timeout: 30_000 }, async () => {
  const partitionRequests = async () =>
    (await emulator.metrics()).containers.find((c) => c.container === "queries").partitions.map((p) => p.requests);
  const readBefore = await partitionRequests();
  const before = await emulator.lastSequence();
  const query = { query: "SELECT * FROM c WHERE c.n >= @min", parameters: [{ name: "@min", value: 5 }] };
  const { results, pages } = await drain(container.items.query(query, { maxItemCount: 4 }));
  assert.deepEqual(results.map((d) => d.id).sort(), items.filter((i) => i.n >= 5).map((i) => i.id));
  assert.ok(pages.length >= 9, `${pages.length} pages of at most 4`);
  for (const page of pages) {
    assert.ok(page.resources.length > 0 && page.resources.length <= 4, "every page the gateway serves holds items, at most maxItemCount");
    assert.ok(page.requestCharge > 0, "every page is charged");
  }

  // The service's gateway serves it: one request a page, none naming a partition key range, no 400/1004.
  // (This SDK asks for the query plan once, in parallel with its first page, and uses it only if the
  // gateway answers 1004; it is never needed here.)
  const requests = (await queriesSince(before)).filter((r) => r.operation === "Query");
  assert.ok((await queriesSince(before)).filter((r) => r.operation === "QueryPlan").length <= 1);
  assert.equal(requests.length, pages.length, "one request a page");
  assert.ok(requests.every((r) => r.statusCode === 200), "no 400 1004");
  assert.ok(requests.every((r) => r.requestedPartitionKeyRangeId === null), "no partition key range id sent");
  assert.ok(requests.every((r) => r.documentCount > 0 && r.path.endsWith("/docs")));
  assert.deepEqual(requests.map((r) => r.documentCount), pages.map((p) => p.resources.length));
  const readAfter = await partitionRequests();
  assert.ok(readAfter.every((n, i) => n > readBefore[i]), "the gateway read every partition");
  assert.equal(requests.reduce((n, r) => n + r.partitionsRead, 0), readAfter.reduce((n, c, i) => n + c - readBefore[i], 0));
});

test("a gateway-served query resumes from a continuation token in a fresh iterator", { timeout: 30_000 }, async () => {
  const query = "SELECT * FROM c WHERE c.weight < 8";
  const expected = items.filter((i) => i.weight < 8).map((i) => i.id).sort();
  const first = container.items.query(query, { maxItemCount: 5 });
  const seen = [];
  let token;
  for (let i = 0; i < 3; i++) {
    const page = await first.fetchNext();
    seen.push(...page.resources.map((d) => d.id));
    token = page.continuationToken;
  }
  assert.ok(token, "more pages after three");
  const resumed = await drain(container.items.query(query, { maxItemCount: 5, continuationToken: token }));
  const all = [...seen, ...resumed.results.map((d) => d.id)];
  assert.equal(new Set(all).size, all.length, "no item twice");
  assert.deepEqual(all.sort(), expected);
});

test("SELECT VALUE and projections are served across partitions", { timeout: 30_000 }, async () => {
  const { resources: values } = await container.items.query("SELECT VALUE c.n FROM c WHERE c.colour = 'red'", { maxItemCount: 3 }).fetchAll();
  assert.deepEqual(values.sort((a, b) => a - b), items.filter((i) => i.colour === "red").map((i) => i.n));

  const projected = await drain(container.items.query("SELECT c.id, c.n * 2 AS doubled FROM c WHERE c.n < 10", { maxItemCount: 2 }));
  assert.deepEqual(projected.results.sort((a, b) => a.doubled - b.doubled), items.filter((i) => i.n < 10).map((i) => ({ id: i.id, doubled: i.n * 2 })));
});

test("reading all items without a partition key crosses every partition", { timeout: 30_000 }, async () => {
  const { resources } = await container.items.readAll({ maxItemCount: 7 }).fetchAll();
  assert.deepEqual(resources.map((d) => d.id).sort(), items.map((i) => i.id));
});

test("ORDER BY ascending and descending over several pages is merged in order", { timeout: 30_000 }, async () => {
  const before = await emulator.lastSequence();
  const ascending = await drain(container.items.query("SELECT * FROM c ORDER BY c.n", { maxItemCount: 4 }));
  assert.deepEqual(ascending.results.map((d) => d.n), items.map((i) => i.n));
  assert.ok(ascending.pages.length > 2, "several pages");

  const requests = await queriesSince(before);
  assert.ok(requests.some((r) => r.operation === "Query" && r.statusCode === 400 && r.subStatusCode === 1004), "the gateway refused it with 1004");
  assert.ok(requests.some((r) => r.operation === "QueryPlan" && r.statusCode === 200), "the SDK fetched the plan");
  assert.equal(new Set(requests.filter((r) => r.statusCode === 200 && r.operation === "Query").map((r) => r.partitionKeyRangeId)).size, 4, "and read each partition");

  const descending = await drain(container.items.query({ query: "SELECT c.id, c.weight FROM c WHERE c.n > @n ORDER BY c.weight DESC", parameters: [{ name: "@n", value: 3 }] }, { maxItemCount: 3 }));
  const weights = descending.results.map((d) => d.weight);
  assert.equal(weights.length, items.filter((i) => i.n > 3).length);
  assert.deepEqual(weights, [...weights].sort((a, b) => b - a));
  assert.deepEqual(Object.keys(descending.results[0]).sort(), ["id", "weight"]);
});

test("VALUE aggregates are combined across partitions", { timeout: 30_000 }, async () => {
  const value = async (text) => (await container.items.query(text).fetchAll()).resources;
  const ns = items.map((i) => i.n);
  assert.deepEqual(await value("SELECT VALUE COUNT(1) FROM c"), [count]);
  assert.deepEqual(await value("SELECT VALUE SUM(c.n) FROM c"), [ns.reduce((a, b) => a + b, 0)]);
  assert.deepEqual(await value("SELECT VALUE MIN(c.n) FROM c WHERE c.n > 3"), [4]);
  assert.deepEqual(await value("SELECT VALUE MAX(c.weight) FROM c"), [9]);
  assert.deepEqual(await value("SELECT VALUE AVG(c.n) FROM c"), [ns.reduce((a, b) => a + b, 0) / count]);
  assert.deepEqual(await value("SELECT VALUE COUNT(1) FROM c WHERE c.colour = 'blue'"), [items.filter((i) => i.colour === "blue").length]);
});

test("TOP and OFFSET LIMIT take the right number of items across partitions", { timeout: 30_000 }, async () => {
  const top = await drain(container.items.query("SELECT TOP 5 * FROM c WHERE c.n >= 10", { maxItemCount: 2 }));
  assert.equal(top.results.length, 5);
  assert.ok(top.results.every((d) => d.n >= 10));

  const topOrdered = await drain(container.items.query("SELECT TOP 6 VALUE c.n FROM c ORDER BY c.n DESC", { maxItemCount: 4 }));
  assert.deepEqual(topOrdered.results, [40, 39, 38, 37, 36, 35]);

  const window = await drain(container.items.query("SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 3 LIMIT 7", { maxItemCount: 3 }));
  assert.deepEqual(window.results, [3, 4, 5, 6, 7, 8, 9]);

  const unordered = await drain(container.items.query("SELECT * FROM c OFFSET 10 LIMIT 4", { maxItemCount: 3 }));
  assert.equal(unordered.results.length, 4);
});

test("DISTINCT is answered with the query plan and de-duplicated across partitions", { timeout: 30_000 }, async () => {
  const before = await emulator.lastSequence();
  const colours = await drain(container.items.query("SELECT DISTINCT VALUE c.colour FROM c", { maxItemCount: 1 }));
  assert.deepEqual(colours.results.sort(), ["blue", "green", "red"]);
  const requests = await queriesSince(before);
  assert.ok(requests.some((r) => r.operation === "Query" && r.statusCode === 400 && r.subStatusCode === 1004));

  const pairs = (await container.items.query("SELECT DISTINCT c.colour, c.weight FROM c WHERE c.weight < 3").fetchAll()).resources;
  const expected = [...new Set(items.filter((i) => i.weight < 3).map((i) => `${i.colour}/${i.weight}`))].sort();
  assert.deepEqual(pairs.map((p) => `${p.colour}/${p.weight}`).sort(), expected);
});

test("DISTINCT in one logical partition pages without repeating a value", { timeout: 30_000 }, async () => {
  const owner = "owner-1";
  const { results } = await drain(container.items.query("SELECT DISTINCT VALUE c.colour FROM c", { partitionKey: owner, maxItemCount: 1 }));
  assert.deepEqual(results.sort(), [...new Set(items.filter((i) => i.ownerId === owner).map((i) => i.colour))].sort());
});

test("GROUP BY is answered with the query plan and merged across partitions", { timeout: 30_000 }, async () => {
  const expected = {};
  for (const i of items) {
    const g = (expected[i.colour] ??= { colour: i.colour, n: 0, total: 0, lightest: Infinity, heaviest: -Infinity });
    g.n++;
    g.total += i.n;
    g.lightest = Math.min(g.lightest, i.weight);
    g.heaviest = Math.max(g.heaviest, i.weight);
  }
  const { resources } = await container.items.query(
    "SELECT c.colour, COUNT(1) AS n, SUM(c.n) AS total, MIN(c.weight) AS lightest, MAX(c.weight) AS heaviest FROM c GROUP BY c.colour",
    { maxItemCount: 2 }).fetchAll();
  assert.deepEqual(resources.sort((a, b) => a.colour.localeCompare(b.colour)), Object.values(expected).sort((a, b) => a.colour.localeCompare(b.colour)));

  const averages = (await container.items.query("SELECT c.colour, AVG(c.n) AS mean FROM c WHERE c.n < 30 GROUP BY c.colour").fetchAll()).resources;
  for (const { colour, mean } of averages) {
    const ns = items.filter((i) => i.colour === colour && i.n < 30).map((i) => i.n);
    assert.equal(mean, ns.reduce((a, b) => a + b, 0) / ns.length, colour);
  }
  assert.equal(averages.length, 3);

  const keys = (await container.items.query("SELECT VALUE c.colour FROM c GROUP BY c.colour").fetchAll()).resources;
  assert.deepEqual(keys.sort(), ["blue", "green", "red"]);
  const counts = (await container.items.query("SELECT VALUE COUNT(1) FROM c GROUP BY c.weight").fetchAll()).resources;
  assert.equal(counts.reduce((a, b) => a + b, 0), count);
  assert.equal(counts.length, new Set(items.map((i) => i.weight)).size);

  const grouped = (await container.items.query("SELECT c.colour, c.weight, COUNT(1) AS n FROM c GROUP BY c.colour, c.weight").fetchAll()).resources;
  assert.equal(grouped.length, new Set(items.map((i) => `${i.colour}/${i.weight}`)).size);
  assert.equal(grouped.reduce((a, g) => a + g.n, 0), count);
});

test("GROUP BY in one logical partition is served directly", { timeout: 30_000 }, async () => {
  const owner = "owner-2";
  const { resources } = await container.items.query("SELECT c.colour, COUNT(1) AS n FROM c GROUP BY c.colour", { partitionKey: owner, maxItemCount: 1 }).fetchAll();
  const mine = items.filter((i) => i.ownerId === owner);
  assert.deepEqual(resources.map((r) => `${r.colour}:${r.n}`).sort(),
    [...new Set(mine.map((i) => i.colour))].map((c) => `${c}:${mine.filter((i) => i.colour === c).length}`).sort());
});

test("GROUP BY with ORDER BY and DISTINCT with ORDER BY are refused with 400 naming the feature, never answered wrongly", { timeout: 30_000 }, async () => {
  await assert.rejects(container.items.query("SELECT c.colour, COUNT(1) AS n FROM c GROUP BY c.colour ORDER BY c.colour").fetchAll(),
    (e) => e.code === 400 && /GROUP BY together with/.test(e.message));
  await assert.rejects(container.items.query("SELECT c.colour, c.n FROM c GROUP BY c.colour").fetchAll(),
    (e) => e.code === 400 && /GROUP BY expression/.test(e.message));
  await assert.rejects(container.items.query("SELECT DISTINCT VALUE c.colour FROM c ORDER BY c.colour").fetchAll(),
    (e) => e.code === 400 && /DISTINCT together with ORDER BY/.test(e.message));
});

test("ORDER BY, TOP and OFFSET LIMIT resume from a continuation token in a fresh iterator (enableQueryControl)", { timeout: 60_000 }, async () => {
  // Without enableQueryControl the SDK gives no continuation token for queries it merges itself;
  // with it, the token records each partition key range's own continuation and the merge state.
  const cases = [
    ["SELECT VALUE c.n FROM c ORDER BY c.n", items.map((i) => i.n)],
    ["SELECT VALUE c.n FROM c ORDER BY c.n DESC", items.map((i) => i.n).reverse()],
    ["SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 4 LIMIT 11", items.map((i) => i.n).slice(4, 15)],
  ];
  for (const [query, expected] of cases) {
    const options = { maxItemCount: 3, enableQueryControl: true };
    const first = await container.items.query(query, options).fetchNext();
    assert.ok(first.continuationToken, `${query}: a continuation token after the first page`);
    const rest = await drain(container.items.query(query, { ...options, continuationToken: first.continuationToken }));
    assert.deepEqual([...first.resources, ...rest.results], expected, query);
  }

  const top = "SELECT TOP 9 VALUE c.n FROM c WHERE c.n >= 2";
  const first = await container.items.query(top, { maxItemCount: 3, enableQueryControl: true }).fetchNext();
  const rest = await drain(container.items.query(top, { maxItemCount: 3, enableQueryControl: true, continuationToken: first.continuationToken }));
  const all = [...first.resources, ...rest.results];
  assert.equal(all.length, 9);
  assert.equal(new Set(all).size, 9);
  assert.ok(all.every((n) => n >= 2));
});

test("aggregates without VALUE are combined across partitions", { timeout: 30_000 }, async () => {
  const { resources } = await container.items.query("SELECT COUNT(1) AS n, SUM(c.n) AS total, MAX(c.weight) AS heaviest FROM c").fetchAll();
  assert.deepEqual(resources, [{ n: count, total: items.reduce((a, i) => a + i.n, 0), heaviest: 9 }]);
});

test("DISTINCT with TOP takes that many distinct values across partitions", { timeout: 30_000 }, async () => {
  const colours = (await container.items.query("SELECT DISTINCT TOP 2 VALUE c.colour FROM c").fetchAll()).resources;
  assert.equal(colours.length, 2);
  assert.equal(new Set(colours).size, 2);
  assert.ok(colours.every((c) => ["red", "green", "blue"].includes(c)));
});
