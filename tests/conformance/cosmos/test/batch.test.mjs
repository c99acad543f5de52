// Transactional batch (container.items.batch) and bulk (container.items.executeBulkOperations) as the
// official JavaScript SDK (@azure/cosmos) sends them: a POST to the container's docs with
// x-ms-cosmos-is-batch-request and a JSON array of operations; atomic for a batch, per operation
// for bulk.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { startEmulator, key } from "../emulator.mjs";

let emulator;
let client;
let database;
let container;

before(async () => {
  emulator = await startEmulator({ partitions: 4 });
  client = emulator.client();
  ({ database } = await client.databases.createIfNotExists({ id: "batch-conformance" }));
  ({ container } = await database.containers.createIfNotExists({ id: "orders", partitionKey: { paths: ["/ownerId"] } }));
});

after(async () => {
  client?.dispose();
  await emulator?.stop();
});

async function countItems(target, ownerId) {
  const { resources } = await target.items
    .query({ query: "SELECT VALUE COUNT(1) FROM c WHERE c.ownerId = @o", parameters: [{ name: "@o", value: ownerId }] }, { partitionKey: ownerId })
    .fetchAll();
  return resources[0];
}

test("a batch of create, upsert, read, replace, patch and delete succeeds with each status and etag", { timeout: 30_000 }, async () => {
  await container.items.create({ id: "b1-existing", ownerId: "owner-b1", weight: 1 });
  await container.items.create({ id: "b1-doomed", ownerId: "owner-b1", weight: 1 });
  const { resource: existing } = await container.item("b1-existing", "owner-b1").read();

  const response = await container.items.batch([
    { operationType: "Create", resourceBody: { id: "b1-new", ownerId: "owner-b1", weight: 2 } },
    { operationType: "Upsert", resourceBody: { id: "b1-upserted", ownerId: "owner-b1", weight: 3 } },
    { operationType: "Read", id: "b1-new" },
    { operationType: "Replace", id: "b1-existing", ifMatch: existing._etag, resourceBody: { id: "b1-existing", ownerId: "owner-b1", weight: 10 } },
    { operationType: "Patch", id: "b1-new", resourceBody: { operations: [{ op: "incr", path: "/weight", value: 5 }] } },
    { operationType: "Delete", id: "b1-doomed" },
  ], "owner-b1");

  assert.equal(response.code, 200);
  assert.deepEqual(response.result.map((r) => r.statusCode), [201, 201, 200, 200, 200, 204]);
  assert.ok(response.result.slice(0, 5).every((r) => typeof r.eTag === "string" && r.eTag.length > 0), "each write and read has its etag");
  assert.equal(response.result[2].resourceBody.weight, 2, "the read sees the create before it");
  assert.equal(response.result[4].resourceBody.weight, 7);
  assert.ok(response.result.every((r) => r.requestCharge > 0), "each operation has its RU charge");
  const total = response.result.reduce((sum, r) => sum + r.requestCharge, 0);
  assert.ok(Math.abs(Number(response.headers["x-ms-request-charge"]) - total) < 0.05, "the batch is charged the sum of its operations");

  assert.equal((await container.item("b1-new", "owner-b1").read()).resource.weight, 7);
  assert.equal((await container.item("b1-existing", "owner-b1").read()).resource.weight, 10);
  assert.equal((await container.item("b1-doomed", "owner-b1").read()).statusCode, 404);
});

test("a failing operation fails the whole batch: 409 for it, 424 for the rest, nothing written", { timeout: 30_000 }, async () => {
  // The service answers a failed transactional batch 207 Multi-Status with each operation's result
  // (docs: "Transactional batch operations in Azure Cosmos DB"): the failing one has its own status,
  // every other one 424 Failed Dependency.
  await container.items.create({ id: "b2-taken", ownerId: "owner-b2", weight: 1 });
  const { resource: before } = await container.item("b2-taken", "owner-b2").read();

  const response = await container.items.batch([
    { operationType: "Create", resourceBody: { id: "b2-first", ownerId: "owner-b2" } },
    { operationType: "Replace", id: "b2-taken", resourceBody: { id: "b2-taken", ownerId: "owner-b2", weight: 99 } },
    { operationType: "Create", resourceBody: { id: "b2-taken", ownerId: "owner-b2" } },
    { operationType: "Create", resourceBody: { id: "b2-last", ownerId: "owner-b2" } },
  ], "owner-b2");

  assert.equal(response.code, 207);
  assert.deepEqual(response.result.map((r) => r.statusCode), [424, 424, 409, 424]);
  assert.equal((await container.item("b2-first", "owner-b2").read()).statusCode, 404, "the create before the failure is rolled back");
  assert.equal((await container.item("b2-last", "owner-b2").read()).statusCode, 404);
  const { resource: after } = await container.item("b2-taken", "owner-b2").read();
  assert.equal(after.weight, 1, "the replace before the failure is rolled back");
  assert.equal(after._etag, before._etag);
  assert.equal(await countItems(container, "owner-b2"), 1);
});

test("a stale ifMatch fails the batch with 412", { timeout: 30_000 }, async () => {
  const { resource } = await container.items.create({ id: "b3", ownerId: "owner-b3", weight: 1 });
  await container.item("b3", "owner-b3").replace({ id: "b3", ownerId: "owner-b3", weight: 2 });
  const response = await container.items.batch([
    { operationType: "Upsert", resourceBody: { id: "b3-other", ownerId: "owner-b3" } },
    { operationType: "Replace", id: "b3", ifMatch: resource._etag, resourceBody: { id: "b3", ownerId: "owner-b3", weight: 3 } },
  ], "owner-b3");
  assert.equal(response.code, 207);
  assert.deepEqual(response.result.map((r) => r.statusCode), [424, 412]);
  assert.equal((await container.item("b3-other", "owner-b3").read()).statusCode, 404);
});

test("a batch of 101 operations is refused", { timeout: 30_000 }, async () => {
  // The service's limit is 100 operations (the SDK itself refuses more before sending); the emulator
  // answers 400, as the service does, when a client sends more anyway.
  const operations = Array.from({ length: 101 }, (_, i) => ({ operationType: "Create", resourceBody: { id: `b4-${i}`, ownerId: "owner-b4" } }));
  const response = await signedBatch("batch-conformance", "orders", operations, ["owner-b4"]);
  assert.equal(response.status, 400);
  assert.match((await response.json()).message, /more operations than what is supported/);
  assert.equal(await countItems(container, "owner-b4"), 0);
});

test("a batch spanning two logical partitions is refused and writes nothing", { timeout: 30_000 }, async () => {
  // A transactional batch is scoped to one logical partition; the service answers an operation for
  // another partition key 400 (sub-status 1001, partition key mismatch) and fails the batch.
  const response = await container.items.batch([
    { operationType: "Create", resourceBody: { id: "b5-a", ownerId: "owner-b5a" } },
    { operationType: "Create", resourceBody: { id: "b5-b", ownerId: "owner-b5b" } },
  ], "owner-b5a");
  assert.equal(response.code, 207);
  assert.deepEqual(response.result.map((r) => r.statusCode), [424, 400]);
  assert.equal(response.result[1].subStatusCode, 1001);
  assert.equal(await countItems(container, "owner-b5a"), 0);
  assert.equal(await countItems(container, "owner-b5b"), 0);
});

test("bulk of 500 creates into a throttled container writes every item exactly once", { timeout: 120_000 }, async () => {
  // 400 RU/s over four partitions: 500 creates of ~5.7 RU take several seconds of budget, so the
  // emulator answers operations it has no budget for 429 with a retry-after and the SDK retries
  // only those (each operation of a bulk request succeeds or fails on its own).
  const { container: throttled } = await database.containers.createIfNotExists({
    id: "bulk-throttled",
    partitionKey: { paths: ["/ownerId"] },
    throughput: 400,
  });
  const sequence = (await emulator.requests()).at(-1)?.sequence ?? 0;
  const operations = Array.from({ length: 500 }, (_, i) => ({
    operationType: "Create",
    partitionKey: `owner-${i % 20}`,
    resourceBody: { id: `bulk-${i}`, ownerId: `owner-${i % 20}`, weight: i },
  }));

  const results = await throttled.items.executeBulkOperations(operations);

  assert.equal(results.length, 500);
  const failures = results.filter((r) => r.error || r.response?.statusCode !== 201);
  assert.deepEqual(failures.map((r) => r.error?.code ?? r.response?.statusCode), [], "every create succeeds once (201), none 409");
  const { resources } = await throttled.items.query("SELECT c.id FROM c").fetchAll();
  assert.equal(resources.length, 500);
  assert.equal(new Set(resources.map((r) => r.id)).size, 500);

  const bulkRequests = (await emulator.requests(sequence)).filter((r) => r.operation === "Bulk");
  assert.ok(bulkRequests.length > 0, "the SDK sent bulk (non-atomic batch) requests");
  assert.ok(bulkRequests.some((r) => r.statusCode === 207 || r.statusCode === 429), "the container was throttled during the load");
});

test("bulk operations succeed or fail on their own", { timeout: 30_000 }, async () => {
  await container.items.create({ id: "bulk-taken", ownerId: "owner-b7" });
  const results = await container.items.executeBulkOperations([
    { operationType: "Create", partitionKey: "owner-b7", resourceBody: { id: "bulk-taken", ownerId: "owner-b7" } },
    { operationType: "Create", partitionKey: "owner-b7", resourceBody: { id: "bulk-free", ownerId: "owner-b7" } },
    { operationType: "Upsert", partitionKey: "owner-b7", resourceBody: { id: "bulk-taken", ownerId: "owner-b7", weight: 2 } },
    { operationType: "Read", partitionKey: "owner-b7", id: "bulk-missing" },
  ]);
  assert.deepEqual(results.map((r) => r.error?.code ?? r.response.statusCode), [409, 201, 200, 404]);
  assert.equal(await countItems(container, "owner-b7"), 2);
});

test("ifNoneMatch: a read of an unchanged item is 304 and the batch commits; a write is 412 and fails it", { timeout: 30_000 }, async () => {
  // Service behaviour: a read whose If-None-Match matches is 304 Not Modified, which does not fail a
  // transactional batch; a write whose If-None-Match matches the item fails with 412.
  const { resource } = await container.items.create({ id: "b8", ownerId: "owner-b8", weight: 1 });

  const reads = await container.items.batch([
    { operationType: "Read", id: "b8", ifNoneMatch: resource._etag },
    { operationType: "Read", id: "b8", ifNoneMatch: "\"an-older-etag\"" },
    { operationType: "Create", resourceBody: { id: "b8-new", ownerId: "owner-b8" } },
  ], "owner-b8");
  assert.equal(reads.code, 200);
  assert.deepEqual(reads.result.map((r) => r.statusCode), [304, 200, 201]);
  assert.equal(reads.result[0].eTag, resource._etag);
  assert.equal(reads.result[0].resourceBody, undefined, "not modified: no body");
  assert.equal(reads.result[1].resourceBody.weight, 1);
  assert.equal(await countItems(container, "owner-b8"), 2);

  const writes = await container.items.batch([
    { operationType: "Create", resourceBody: { id: "b8-other", ownerId: "owner-b8" } },
    { operationType: "Replace", id: "b8", ifNoneMatch: resource._etag, resourceBody: { id: "b8", ownerId: "owner-b8", weight: 2 } },
  ], "owner-b8");
  assert.equal(writes.code, 207);
  assert.deepEqual(writes.result.map((r) => r.statusCode), [424, 412]);
  const upsert = await container.items.batch([
    { operationType: "Upsert", ifNoneMatch: "*", resourceBody: { id: "b8", ownerId: "owner-b8", weight: 3 } },
  ], "owner-b8");
  assert.deepEqual(upsert.result.map((r) => r.statusCode), [412]);
  assert.equal((await container.item("b8", "owner-b8").read()).resource.weight, 1);
  assert.equal(await countItems(container, "owner-b8"), 2);
});

test("a batch operation field the emulator does not model is refused with a 400 naming it, and nothing is written", { timeout: 30_000 }, async () => {
  // A time to live would make the item expire on the service; written as if it were absent, the item
  // would outlive it here. Refused rather than ignored. (The SDK wraps a failed batch request in a plain
  // Error without its status, so the status is read from the emulator's request log.)
  const since = (await emulator.requests()).at(-1)?.sequence ?? 0;
  await assert.rejects(
    container.items.batch([{ operationType: "Create", resourceBody: { id: "b9", ownerId: "owner-b9" }, timeToLiveInSeconds: 60 }], "owner-b9"),
    (e) => /field 'timeToLiveInSeconds' is not supported/.test(e.message));
  assert.deepEqual((await emulator.requests(since)).filter((r) => r.operation === "Batch").map((r) => r.statusCode), [400]);
  assert.equal(await countItems(container, "owner-b9"), 0);
});

/** A transactional batch request signed with the account key, sent without the SDK's own checks. */
function signedBatch(databaseId, containerId, operations, partitionKey) {
  const date = new Date().toUTCString();
  const link = `dbs/${databaseId}/colls/${containerId}`;
  const signature = createHmac("sha256", Buffer.from(key, "base64"))
    .update(`post\ndocs\n${link}\n${date.toLowerCase()}\n\n`)
    .digest("base64");
  return fetch(new URL(`${link}/docs`, emulator.endpoint), {
    method: "POST",
    headers: {
      authorization: encodeURIComponent(`type=master&ver=1.0&sig=${signature}`),
      "x-ms-date": date,
      "x-ms-version": "2020-07-15",
      "content-type": "application/json",
      "x-ms-cosmos-is-batch-request": "True",
      "x-ms-cosmos-batch-atomic": "True",
      "x-ms-documentdb-partitionkey": JSON.stringify(partitionKey),
    },
    body: JSON.stringify(operations),
  });
}
