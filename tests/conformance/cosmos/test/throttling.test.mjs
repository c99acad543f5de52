// Throttling and offers as the official JavaScript SDK (@azure/cosmos) sees them. A partition over its
// RU budget answers 429 with sub-status 3200 and x-ms-retry-after-ms (docs: "Diagnose and troubleshoot
// Azure Cosmos DB request rate too large (429) exceptions"); with its retries off the SDK throws it,
// with them on (the default) it waits the retry-after and tries again. A container's throughput is
// its offer, read and replaced at run time (docs: "Provision standard (manual) throughput").
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startEmulator } from "../emulator.mjs";

// 10 KB: a create costs 57 RU (5.7 RU a KB), so two of them spend a partition's burst whatever this machine's pace.
const padding = "x".repeat(10 * 1024);

let emulator;
let client;
let impatientClient;
let database;

before(async () => {
  emulator = await startEmulator({ partitions: 4 });
  client = emulator.client();
  impatientClient = emulator.client({ retryOptions: { maxRetryAttemptCount: 0 } });
  ({ database } = await client.databases.createIfNotExists({ id: "throttling" }));
});

after(async () => {
  client?.dispose();
  impatientClient?.dispose();
  await emulator?.stop();
});

/** A container of 400 RU/s over four partitions: 100 RU/s a partition, a burst of 100 RU. */
async function throttledContainer(id) {
  const { container } = await database.containers.createIfNotExists({ id, partitionKey: { paths: ["/ownerId"] }, throughput: 400 });
  return container;
}

test("without SDK retries a point operation over the partition's budget is 429 with a retry-after", { timeout: 60_000 }, async () => {
  await throttledContainer("impatient");
  const impatient = impatientClient.database("throttling").container("impatient");
  let error;
  for (let i = 0; i < 10 && !error; i++) {
    try {
      await impatient.items.create({ id: `p-${i}`, ownerId: "owner-hot", padding });
    } catch (e) {
      error = e;
    }
  }

  assert.ok(error, "creates of 57 RU into one partition outrun its 100 RU/s");
  assert.equal(error.code, 429);
  assert.equal(error.substatus, 3200);
  assert.ok(error.retryAfterInMs > 0 && error.retryAfterInMs <= 5000, `retry after ${error.retryAfterInMs} ms`);
  assert.equal(Number(error.headers["x-ms-retry-after-ms"]), error.retryAfterInMs);
});

test("with SDK retries a burst of point operations waits out the 429s and every one succeeds", { timeout: 120_000 }, async () => {
  const container = await throttledContainer("patient");
  const since = await emulator.lastSequence();

  const statuses = [];
  for (let i = 0; i < 20; i++) {
    statuses.push((await container.items.create({ id: `p-${i}`, ownerId: "owner-hot", padding })).statusCode);
  }

  assert.deepEqual(statuses, Array(20).fill(201));
  const creates = (await emulator.requests(since)).filter((r) => r.container === "patient" && r.operation === "CreateItem");
  const throttled = creates.filter((r) => r.statusCode === 429);
  assert.ok(throttled.length > 0, "20 creates of 57 RU into a partition of 100 RU/s were throttled on the way");
  assert.equal(creates.filter((r) => r.statusCode === 201).length, 20, "each throttled create was sent again and succeeded once");
  const { resources } = await container.items.query("SELECT VALUE COUNT(1) FROM c", { partitionKey: "owner-hot" }).fetchAll();
  assert.deepEqual(resources, [20]);
});

test("a container's offer is read and replaced, and the partitions' budgets follow at once", { timeout: 60_000 }, async () => {
  const container = await throttledContainer("offered");
  const { resource: containerResource } = await container.read();

  const { resource: offer, offer: handle } = await container.readOffer();
  assert.equal(offer.offerResourceId, containerResource._rid);
  assert.equal(offer.content.offerThroughput, 400);
  const { resources: offers } = await client.offers.readAll().fetchAll();
  assert.ok(offers.some((o) => o.id === offer.id), "the offer is in the account's offer feed");

  const { resource: replaced } = await handle.replace({ ...offer, content: { ...offer.content, offerThroughput: 2000 } });
  assert.equal(replaced.content.offerThroughput, 2000);
  assert.equal((await container.readOffer()).resource.content.offerThroughput, 2000);

  const metrics = (await emulator.metrics()).containers.find((c) => c.database === "throttling" && c.container === "offered");
  assert.equal(metrics.provisionedThroughput, 2000);
  assert.deepEqual(metrics.partitions.map((p) => p.provisionedThroughput), [500, 500, 500, 500], "2,000 RU/s over four partitions, at once");
});

test("a throttled transactional batch is 429 as a whole and writes nothing; with SDK retries it succeeds", { timeout: 120_000 }, async () => {
  await throttledContainer("batches");
  const impatient = impatientClient.database("throttling").container("batches");
  const patient = client.database("throttling").container("batches");
  // 20 creates of 5 KB (28.5 RU): one batch leaves the partition about 470 RU in debt, almost five seconds to repay.
  const batch = (round) => Array.from({ length: 20 }, (_, i) => ({
    operationType: "Create",
    resourceBody: { id: `t-${round}-${i}`, ownerId: "owner-t", round, padding: padding.slice(0, 5 * 1024) },
  }));

  const before = await emulator.lastSequence();
  let error;
  let round = 0;
  for (; round < 100 && !error; round++) {
    try {
      const response = await impatient.items.batch(batch(round), "owner-t");
      assert.equal(response.code, 200);
    } catch (e) {
      error = e;
    }
  }

  // The SDK wraps a failed batch request in a plain Error that keeps the message only; the status is in the request log.
  assert.ok(error, "back-to-back batches outrun the partition's budget");
  assert.match(error.message, /Request rate is large/);
  const refused = (await emulator.requests(before)).filter((r) => r.container === "batches" && r.operation === "Batch").at(-1);
  assert.equal(refused.statusCode, 429);
  assert.equal(refused.subStatusCode, 3200);
  assert.equal(refused.requestCharge, 0);
  const throttledRound = round - 1;

  // At once, while the partition still repays the batches before: the SDK waits the retry-after and succeeds.
  const since = await emulator.lastSequence();
  const response = await patient.items.batch(batch(1000), "owner-t");
  assert.equal(response.code, 200);
  assert.ok(response.result.every((r) => r.statusCode === 201));
  const attempts = (await emulator.requests(since)).filter((r) => r.container === "batches" && r.operation === "Batch").map((r) => r.statusCode);
  assert.equal(attempts.at(-1), 200);
  assert.ok(attempts.includes(429), `the SDK was throttled, waited and sent the batch again (${attempts.join(", ")})`);

  const count = async (r) => (await patient.items
    .query({ query: "SELECT VALUE COUNT(1) FROM c WHERE c.round = @r", parameters: [{ name: "@r", value: r }] }, { partitionKey: "owner-t" })
    .fetchAll()).resources[0];
  assert.equal(await count(throttledRound), 0, "the throttled batch wrote none of its items");
  assert.equal(await count(1000), 20);
});
