// Cross-partition DISTINCT with values JavaScript calls falsy (0, false, "", null). The query plan
// says distinctType "Unordered" with no rewrite (as the service's plan does), every partition key
// range answers its own distinct values, and the SDK removes duplicates across ranges itself. Its
// filter (UnorderedDistinctEndpointComponent in @azure/cosmos 4.9.3) skips every falsy row before
// hashing it, so those values never reach the caller although every page carried them: an SDK
// defect that the service shows the same way. These tests pin both halves, so that an emulator that
// lost a value fails the first and an SDK that stops dropping them fails the second (and
// docs/emulators/cosmos-db.md's compatibility table is then out of date).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startEmulator } from "../emulator.mjs";

const count = 1500;
const falsy = [0, false, "", null];
const truthy = [1, true, "a"];
let emulator;
let client;
let container;
let pages;

before(async () => {
  emulator = await startEmulator({ partitions: 4 });
  pages = [];
  // Every query page the SDK received, as the emulator sent it.
  const recordQueryPages = async (context, diagnosticNode, next) => {
    const response = await next(context);
    if (context.operationType === "query" && Array.isArray(response.result?.Documents)) {
      pages.push({ range: context.partitionKeyRangeId, documents: response.result.Documents });
    }
    return response;
  };
  client = emulator.client({ plugins: [{ on: "request", plugin: recordQueryPages }] });
  const { database } = await client.databases.createIfNotExists({ id: "conformance" });
  ({ container } = await database.containers.createIfNotExists({ id: "distinct", partitionKey: { paths: ["/ownerId"] } }));
  const values = [...falsy, ...truthy];
  const items = Array.from({ length: count }, (_, n) => ({
    id: `d-${n}`, ownerId: `owner-${n % 37}`, n, j: n % 10, v: values[n % values.length],
  }));
  for (let i = 0; i < items.length; i += 50) {
    await Promise.all(items.slice(i, i + 50).map((item) => container.items.create(item)));
  }
  const { resources: ranges } = await container.readPartitionKeyRanges().fetchAll();
  assert.equal(ranges.length, 4);
});

after(async () => {
  client?.dispose();
  await emulator?.stop();
});

async function query(text, options = {}) {
  pages.length = 0;
  const { resources } = await container.items.query(text, options).fetchAll();
  return { resources, pages: [...pages] };
}

const numbers = (values) => [...values].sort((a, b) => a - b);

test("cross-partition DISTINCT VALUE: every range's page carries 0, and this SDK's own DISTINCT filter drops it", { timeout: 60_000 }, async () => {
  const { resources, pages: received } = await query("SELECT DISTINCT VALUE c.j FROM c WHERE c.n < 1400");

  // What the emulator answered: each range's own distinct values, 0 among them, none repeated in a page.
  const perRange = received.filter((p) => p.range !== undefined);
  assert.ok(perRange.length >= 4, `one page or more per partition key range (${perRange.length})`);
  assert.deepEqual(numbers(new Set(perRange.flatMap((p) => p.documents))), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.ok(perRange.every((p) => new Set(p.documents).size === p.documents.length));

  // What the SDK makes of it: 1…9. The service's pages are the same, and so is this answer there.
  assert.deepEqual(numbers(resources), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

test("the SDK's DISTINCT filter drops exactly the falsy values: 0, false, empty string and null", { timeout: 60_000 }, async () => {
  const { resources, pages: received } = await query("SELECT DISTINCT VALUE c.v FROM c");

  const sent = new Set(received.filter((p) => p.range !== undefined).flatMap((p) => p.documents));
  assert.deepEqual([...falsy, ...truthy].filter((v) => !sent.has(v)), [], "the emulator sent every value");
  assert.deepEqual(new Set(resources), new Set(truthy));
});

test("the workarounds keep 0: DISTINCT over objects, or one logical partition", { timeout: 60_000 }, async () => {
  // Objects are never falsy, so the SDK's filter hashes and keeps every one of them.
  const objects = await query("SELECT DISTINCT c.j FROM c WHERE c.n < 1400");
  assert.deepEqual(numbers(objects.resources.map((o) => o.j)), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);

  // With a partition key the gateway serves the query itself; the SDK runs no DISTINCT filter of its own.
  const owner = await query("SELECT DISTINCT VALUE c.j FROM c WHERE c.n < 1400", { partitionKey: "owner-0" });
  const expected = new Set(Array.from({ length: 1400 }, (_, n) => n).filter((n) => n % 37 === 0).map((n) => n % 10));
  assert.ok(expected.has(0));
  assert.deepEqual(numbers(owner.resources), numbers(expected));
});
