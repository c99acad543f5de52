// Hierarchical partition keys (kind MultiHash, up to three paths) as the official JavaScript SDK
// (@azure/cosmos) uses them (docs: "Hierarchical partition keys in Azure Cosmos DB"). Items are placed by
// the effective partition key the SDK's own hashing computes (each component hashed with version 2, the
// hashes concatenated); point operations need the complete key, and a prefix is refused with 400 as the
// service refuses it; queries and the change feed scoped to a prefix read only the physical partition the
// prefix hashes to.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { ChangeFeedStartFrom, PartitionKeyKind, StatusCodes } from "@azure/cosmos";
import { startEmulator } from "../emulator.mjs";

// The SDK's own effective partition key code; its package exports do not expose it, so it is loaded by path.
const { hashMultiHashPartitionKey } = await import(new URL("../node_modules/@azure/cosmos/dist/esm/utils/hashing/multiHash.js", import.meta.url));

const count = 96;
let emulator;
let client;
let container;
let ranges;
let sessions;

before(async () => {
  emulator = await startEmulator({ partitions: 8 });
  client = emulator.client();
  const { database } = await client.databases.createIfNotExists({ id: "hierarchical" });
  ({ container } = await database.containers.createIfNotExists({
    id: "sessions",
    partitionKey: { paths: ["/tenantId", "/userId", "/sessionId"], kind: PartitionKeyKind.MultiHash, version: 2 },
  }));
  sessions = Array.from({ length: count }, (_, i) => ({
    id: `s${i}`, tenantId: `tenant-${i % 8}`, userId: `user-${Math.floor(i / 8) % 4}`, sessionId: `session-${Math.floor(i / 32)}`, n: i,
  }));
  for (const session of sessions) {
    // The SDK takes the key from the item, using the container's three paths.
    await container.items.create(session);
  }
  ({ resources: ranges } = await container.readPartitionKeyRanges().fetchAll());
  assert.equal(ranges.length, 8);
});

after(async () => {
  client?.dispose();
  await emulator?.stop();
});

const fullKey = (s) => [s.tenantId, s.userId, s.sessionId];

/** The items of a change feed iterator until it answers 304 Not Modified. */
async function changes(iterator) {
  const items = [];
  for (;;) {
    const response = await iterator.readNext();
    if (response.statusCode === StatusCodes.NotModified) return items;
    items.push(...response.result);
  }
}

/** The id of the partition key range whose EPK range holds the SDK's hash of `key` (complete or prefix). */
function homeRange(key) {
  const epk = hashMultiHashPartitionKey(key);
  return ranges.find((r) => epk >= r.minInclusive && epk < r.maxExclusive).id;
}

test("the container reports its MultiHash definition", { timeout: 30_000 }, async () => {
  const { resource } = await container.read();
  assert.deepEqual(resource.partitionKey, { paths: ["/tenantId", "/userId", "/sessionId"], kind: "MultiHash", version: 2 });
});

test("every item lives in the partition the SDK's own hashing puts it in", { timeout: 60_000 }, async () => {
  const seen = [];
  for (const range of await container.getFeedRanges()) {
    for (const item of await changes(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(range) }))) {
      const epk = hashMultiHashPartitionKey(fullKey(item));
      assert.ok(epk >= range.minInclusive && epk < range.maxExclusive,
        `${item.id} hashes to ${epk} in the SDK but is stored in [${range.minInclusive}, ${range.maxExclusive})`);
      seen.push(item.id);
    }
  }
  assert.equal(seen.length, count);
  assert.equal(new Set(seen).size, count);
});

test("point operations take the complete key; a prefix is refused with 400", { timeout: 30_000 }, async () => {
  const session = sessions[5];
  const { resource, statusCode } = await container.item(session.id, fullKey(session)).read();
  assert.equal(statusCode, 200);
  assert.equal(resource.n, 5);

  for (const prefix of [[session.tenantId], [session.tenantId, session.userId]]) {
    const refused = (e) => e.code === 400 && e.substatus === 1001 && /fewer components/.test(e.message);
    await assert.rejects(container.item(session.id, prefix).read(), refused);
    await assert.rejects(container.item(session.id, prefix).replace({ ...session, n: -1 }), refused);
    await assert.rejects(container.item(session.id, prefix).delete(), refused);
    await assert.rejects(container.item(session.id, prefix).patch([{ op: "set", path: "/n", value: -1 }]), refused);
  }
  assert.equal((await container.item(session.id, fullKey(session)).read()).resource.n, 5);
});

test("a query scoped to a prefix reads only the partition the prefix hashes to", { timeout: 60_000 }, async () => {
  for (const [key, expected] of [
    [["tenant-3"], sessions.filter((s) => s.tenantId === "tenant-3")],
    [["tenant-3", "user-2"], sessions.filter((s) => s.tenantId === "tenant-3" && s.userId === "user-2")],
    [["tenant-3", "user-2", "session-1"], sessions.filter((s) => s.tenantId === "tenant-3" && s.userId === "user-2" && s.sessionId === "session-1")],
  ]) {
    const since = await emulator.lastSequence();
    const { resources } = await container.items.query("SELECT * FROM c", { partitionKey: key, maxItemCount: 2 }).fetchAll();
    assert.deepEqual(resources.map((s) => s.id).sort(), expected.map((s) => s.id).sort(), key.join("/"));
    const queries = (await emulator.requests(since)).filter((r) => r.operation === "Query");
    assert.ok(queries.length > 0);
    assert.ok(queries.every((r) => r.statusCode === 200 && r.partitionsRead === 1 && r.partitionKeyRangeId === homeRange(["tenant-3"])),
      `${key.join("/")}: every page from partition ${homeRange(["tenant-3"])}`);
  }

  const ordered = (await container.items.query("SELECT VALUE c.n FROM c ORDER BY c.n DESC", { partitionKey: ["tenant-5"] }).fetchAll()).resources;
  assert.deepEqual(ordered, sessions.filter((s) => s.tenantId === "tenant-5").map((s) => s.n).reverse());
});

test("a WHERE clause that pins the first level is narrowed to its partition; the middle level alone reads them all", { timeout: 60_000 }, async () => {
  let since = await emulator.lastSequence();
  const tenant = (await container.items.query("SELECT * FROM c WHERE c.tenantId = 'tenant-2'").fetchAll()).resources;
  const narrowed = (await emulator.requests(since)).filter((r) => r.operation === "Query");
  assert.equal(tenant.length, sessions.filter((s) => s.tenantId === "tenant-2").length);
  assert.ok(narrowed.every((r) => r.partitionsRead === 1 && r.partitionKeyRangeId === homeRange(["tenant-2"])));

  since = await emulator.lastSequence();
  const users = (await container.items.query("SELECT * FROM c WHERE c.userId = 'user-3'").fetchAll()).resources;
  const fannedOut = (await emulator.requests(since)).filter((r) => r.operation === "Query");
  assert.equal(users.length, sessions.filter((s) => s.userId === "user-3").length);
  assert.equal(fannedOut.reduce((n, r) => n + r.partitionsRead, 0), 8, "every partition read once");
});

test("the change feed of a prefix reads its partition and returns only its items", { timeout: 60_000 }, async () => {
  const since = await emulator.lastSequence();
  const items = await changes(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(["tenant-6"]), maxItemCount: 5 }));
  assert.deepEqual(items.map((s) => s.id).sort(), sessions.filter((s) => s.tenantId === "tenant-6").map((s) => s.id).sort());
  const reads = (await emulator.requests(since)).filter((r) => r.operation === "ReadChangeFeed");
  assert.ok(reads.length > 0 && reads.every((r) => r.partitionKeyRangeId === homeRange(["tenant-6"])));
});

test("a transactional batch takes the complete key; a prefix is refused", { timeout: 30_000 }, async () => {
  const key = ["tenant-9", "user-9", "session-9"];
  const response = await container.items.batch([
    { operationType: "Create", resourceBody: { id: "b1", tenantId: "tenant-9", userId: "user-9", sessionId: "session-9" } },
    { operationType: "Read", id: "b1" },
  ], key);
  assert.equal(response.code, 200);
  assert.deepEqual(response.result.map((r) => r.statusCode), [201, 200]);

  // The SDK wraps a failed batch request in a plain Error that keeps the service's message only.
  await assert.rejects(container.items.batch([
    { operationType: "Create", resourceBody: { id: "b2", tenantId: "tenant-9", userId: "user-9", sessionId: "session-9" } },
  ], ["tenant-9"]), (e) => /fewer components than defined/.test(e.message));
  assert.equal((await container.item("b2", key).read()).statusCode, 404);
});
