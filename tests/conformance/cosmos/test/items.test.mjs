// Databases, containers, items and single-partition queries as the official JavaScript SDK
// (@azure/cosmos) sees them on the emulator.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startEmulator } from "../emulator.mjs";

let emulator;
let client;
let container;

before(async () => {
  emulator = await startEmulator({ partitions: 4 });
  client = emulator.client();
  const { database } = await client.databases.createIfNotExists({ id: "conformance" });
  ({ container } = await database.containers.createIfNotExists({ id: "items", partitionKey: { paths: ["/ownerId"] } }));
});

after(async () => {
  client?.dispose();
  await emulator?.stop();
});

test("a database and a container are created once and read back", { timeout: 30_000 }, async () => {
  const { database, statusCode } = await client.databases.createIfNotExists({ id: "conformance" });
  assert.equal(statusCode, 200, "the second createIfNotExists reads the existing database");
  const { resource } = await database.container("items").read();
  assert.equal(resource.id, "items");
  assert.deepEqual(resource.partitionKey.paths, ["/ownerId"]);
  const { resources: containers } = await database.containers.readAll().fetchAll();
  assert.ok(containers.some((c) => c.id === "items"));
  const { resources: ranges } = await container.readPartitionKeyRanges().fetchAll();
  assert.equal(ranges.length, 4, "four physical partitions");
});

test("an item is created, read, replaced and deleted", { timeout: 30_000 }, async () => {
  const created = await container.items.create({ id: "crud-1", ownerId: "owner-crud", weight: 3 });
  assert.equal(created.statusCode, 201);
  assert.ok(created.etag);
  const read = await container.item("crud-1", "owner-crud").read();
  assert.equal(read.statusCode, 200);
  assert.equal(read.resource.weight, 3);
  assert.equal(read.resource._etag, created.etag);

  const replaced = await container.item("crud-1", "owner-crud").replace({ id: "crud-1", ownerId: "owner-crud", weight: 4 });
  assert.equal(replaced.statusCode, 200);
  assert.notEqual(replaced.etag, created.etag);

  const upserted = await container.items.upsert({ id: "crud-1", ownerId: "owner-crud", weight: 5 });
  assert.equal(upserted.statusCode, 200);
  assert.equal(upserted.resource.weight, 5);

  const deleted = await container.item("crud-1", "owner-crud").delete();
  assert.equal(deleted.statusCode, 204);
  const gone = await container.item("crud-1", "owner-crud").read();
  assert.equal(gone.statusCode, 404, "a point read of a deleted item is 404 (the SDK returns it, not throws)");
  assert.equal(gone.resource, undefined);
});

test("a point read of an unknown item is 404", { timeout: 30_000 }, async () => {
  const { statusCode, resource } = await container.item("no-such-item", "owner-x").read();
  assert.equal(statusCode, 404);
  assert.equal(resource, undefined);
});

test("a create of an existing id is 409", { timeout: 30_000 }, async () => {
  await container.items.create({ id: "dup-1", ownerId: "owner-dup" });
  await assert.rejects(container.items.create({ id: "dup-1", ownerId: "owner-dup" }), (e) => e.code === 409);
});

test("a replace or delete with a stale etag is 412, with the current one succeeds", { timeout: 30_000 }, async () => {
  const { etag: first } = await container.items.create({ id: "etag-1", ownerId: "owner-etag", version: 1 });
  const { etag: second } = await container.item("etag-1", "owner-etag").replace(
    { id: "etag-1", ownerId: "owner-etag", version: 2 },
    { accessCondition: { type: "IfMatch", condition: first } });
  assert.notEqual(second, first);

  await assert.rejects(
    container.item("etag-1", "owner-etag").replace({ id: "etag-1", ownerId: "owner-etag", version: 3 },
      { accessCondition: { type: "IfMatch", condition: first } }),
    (e) => e.code === 412);
  await assert.rejects(
    container.item("etag-1", "owner-etag").delete({ accessCondition: { type: "IfMatch", condition: first } }),
    (e) => e.code === 412);

  const notModified = await container.item("etag-1", "owner-etag").read({ accessCondition: { type: "IfNoneMatch", condition: second } });
  assert.equal(notModified.statusCode, 304);

  const { resource } = await container.item("etag-1", "owner-etag").read();
  assert.equal(resource.version, 2, "the refused writes changed nothing");
  const deleted = await container.item("etag-1", "owner-etag").delete({ accessCondition: { type: "IfMatch", condition: second } });
  assert.equal(deleted.statusCode, 204);
});

test("a query with a partition key pages with a small maxItemCount and resumes from a continuation token", { timeout: 30_000 }, async () => {
  for (let i = 0; i < 7; i++) {
    await container.items.create({ id: `pk-${i}`, ownerId: "owner-pk", n: i });
  }
  await container.items.create({ id: "pk-other", ownerId: "owner-other", n: 100 });

  const query = { query: "SELECT * FROM c WHERE c.n >= @min", parameters: [{ name: "@min", value: 0 }] };
  const iterator = container.items.query(query, { partitionKey: "owner-pk", maxItemCount: 3 });
  const first = await iterator.fetchNext();
  assert.equal(first.resources.length, 3);
  assert.ok(first.continuationToken, "more pages follow");

  const resumed = container.items.query(query, { partitionKey: "owner-pk", maxItemCount: 3, continuationToken: first.continuationToken });
  const rest = [];
  while (resumed.hasMoreResults()) {
    const page = await resumed.fetchNext();
    assert.ok(page.resources.length <= 3);
    rest.push(...page.resources);
  }
  const ids = [...first.resources, ...rest].map((d) => d.id).sort();
  assert.deepEqual(ids, [0, 1, 2, 3, 4, 5, 6].map((i) => `pk-${i}`));

  const { resources: all } = await container.items.query(query, { partitionKey: "owner-pk" }).fetchAll();
  assert.equal(all.length, 7);
});

test("a patch as a bare array of operations (the SDK's form without a condition) is applied", { timeout: 30_000 }, async () => {
  await container.items.create({ id: "patch-1", ownerId: "owner-patch", weight: 2, tags: ["a"] });
  const { statusCode, resource } = await container.item("patch-1", "owner-patch").patch([
    { op: "incr", path: "/weight", value: 3 },
    { op: "set", path: "/label", value: "fragile" },
    { op: "add", path: "/tags/-", value: "b" },
  ]);
  assert.equal(statusCode, 200);
  assert.equal(resource.weight, 5);
  assert.equal(resource.label, "fragile");
  assert.deepEqual(resource.tags, ["a", "b"]);
});

test("a patch with a condition ({ condition, operations }) is applied only when the condition holds", { timeout: 30_000 }, async () => {
  await container.items.create({ id: "patch-2", ownerId: "owner-patch", weight: 2 });
  const applied = await container.item("patch-2", "owner-patch").patch({
    condition: "FROM c WHERE c.weight < 10",
    operations: [{ op: "set", path: "/weight", value: 7 }],
  });
  assert.equal(applied.resource.weight, 7);
  await assert.rejects(
    container.item("patch-2", "owner-patch").patch({ condition: "FROM c WHERE c.weight > 10", operations: [{ op: "set", path: "/weight", value: 100 }] }),
    (e) => e.code === 412);
  const { resource } = await container.item("patch-2", "owner-patch").read();
  assert.equal(resource.weight, 7);
});
