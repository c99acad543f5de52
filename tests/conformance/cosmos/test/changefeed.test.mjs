// The change feed in latest-version mode as the official JavaScript SDK (@azure/cosmos 4.x) reads it:
// container.items.getChangeFeedIterator over the whole container, one logical partition, and resumed
// from a continuation token in a new iterator. The service's documented behaviour checked here:
// each changed item comes once, in its latest version; deletes are not in the feed; when nothing
// changed, the feed answers 304 Not Modified (the JavaScript SDK hands that page back with
// statusCode 304 and no items, where the .NET SDK's iterator returns a NotModified response).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { ChangeFeedMode, ChangeFeedStartFrom, StatusCodes } from "@azure/cosmos";
import { startEmulator } from "../emulator.mjs";

let emulator;
let client;
let database;

before(async () => {
  emulator = await startEmulator({ partitions: 4 });
  client = emulator.client();
  ({ database } = await client.databases.createIfNotExists({ id: "changefeed" }));
});

after(async () => {
  client?.dispose();
  await emulator?.stop();
});

async function seeded(id, count) {
  const { container } = await database.containers.createIfNotExists({ id, partitionKey: { paths: ["/ownerId"] } });
  for (let i = 0; i < count; i++) {
    await container.items.create({ id: `d${i}`, ownerId: `owner-${i % 7}`, version: 1 });
  }
  return container;
}

/** Reads until the feed answers 304; returns the items, the pages with items and the last continuation token. */
async function drain(iterator) {
  const items = [];
  let pages = 0;
  for (;;) {
    const response = await iterator.readNext();
    if (response.statusCode === StatusCodes.NotModified) {
      assert.equal(response.result.length, 0);
      return { items, pages, continuationToken: response.continuationToken };
    }
    assert.equal(response.statusCode, StatusCodes.Ok);
    assert.ok(response.requestCharge > 0, "a change feed page is charged");
    pages++;
    items.push(...response.result);
  }
}

test("from the beginning each item comes once, in its latest version, without the deleted ones", { timeout: 60_000 }, async () => {
  const container = await seeded("beginning", 30);
  for (let i = 0; i < 5; i++) {
    await container.item(`d${i}`, `owner-${i % 7}`).replace({ id: `d${i}`, ownerId: `owner-${i % 7}`, version: 2 });
  }
  await container.item("d29", `owner-${29 % 7}`).delete();

  const { items, pages } = await drain(container.items.getChangeFeedIterator({
    changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
    maxItemCount: 4,
  }));

  assert.equal(items.length, 29);
  assert.equal(new Set(items.map((i) => i.id)).size, 29);
  assert.ok(!items.some((i) => i.id === "d29"), "a deleted item is not in the latest-version feed");
  for (const item of items) {
    assert.equal(item.version, Number(item.id.slice(1)) < 5 ? 2 : 1, `${item.id} in its latest version`);
    assert.equal(typeof item._lsn, "number", "change feed items carry _lsn");
  }
  assert.ok(pages > 4, `page size 4 over 29 items takes several pages per partition (took ${pages})`);
  // Within a logical partition the feed keeps write order: the replaced item comes after the others.
  assert.deepEqual(items.filter((i) => i.ownerId === "owner-0").map((i) => i.id), ["d7", "d14", "d21", "d28", "d0"]);
});

test("a continuation token resumes a new iterator with only the later changes", { timeout: 60_000 }, async () => {
  const container = await seeded("resume", 12);
  const first = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }));
  assert.equal(first.items.length, 12);
  assert.ok(first.continuationToken);

  await container.items.upsert({ id: "d3", ownerId: "owner-3", version: 5 });
  await container.items.create({ id: "n1", ownerId: "owner-1", version: 1 });
  await container.items.create({ id: "n2", ownerId: "owner-9", version: 1 });

  const later = await drain(container.items.getChangeFeedIterator({
    changeFeedStartFrom: ChangeFeedStartFrom.Continuation(first.continuationToken),
  }));
  assert.deepEqual(later.items.map((i) => i.id).sort(), ["d3", "n1", "n2"]);
  assert.equal(later.items.find((i) => i.id === "d3").version, 5);

  const none = await drain(container.items.getChangeFeedIterator({
    changeFeedStartFrom: ChangeFeedStartFrom.Continuation(later.continuationToken),
  }));
  assert.equal(none.items.length, 0, "nothing changed since: 304 straight away");
});

test("from now only changes after the first read are returned", { timeout: 60_000 }, async () => {
  const container = await seeded("now", 10);
  const iterator = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
  assert.equal((await drain(iterator)).items.length, 0);

  await container.items.create({ id: "late-1", ownerId: "owner-2", version: 1 });
  await container.items.create({ id: "late-2", ownerId: "owner-5", version: 1 });
  const { items } = await drain(iterator);
  assert.deepEqual(items.map((i) => i.id).sort(), ["late-1", "late-2"]);
});

test("one logical partition's change feed holds only its items and resumes", { timeout: 60_000 }, async () => {
  const container = await seeded("logical", 21);
  const first = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning("owner-4") }));
  assert.deepEqual(first.items.map((i) => i.id).sort(), ["d11", "d18", "d4"]);

  await container.items.create({ id: "x1", ownerId: "owner-4", version: 1 });
  await container.items.create({ id: "x2", ownerId: "owner-5", version: 1 });
  const later = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(first.continuationToken) }));
  assert.deepEqual(later.items.map((i) => i.id), ["x1"]);
});

test("all versions and deletes mode is refused with a 400 that names it", { timeout: 60_000 }, async () => {
  const container = await seeded("avad", 2);
  const iterator = container.items.getChangeFeedIterator({
    changeFeedStartFrom: ChangeFeedStartFrom.Now(),
    changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
  });
  await assert.rejects(iterator.readNext(), (error) => {
    assert.equal(error.code, 400);
    assert.match(error.message, /all versions and deletes/);
    return true;
  });
});

test("from a point in time only items changed at or after it are returned", { timeout: 60_000 }, async () => {
  const container = await seeded("time", 6);
  const { resource } = await container.item("d5", "owner-5").read();
  const earlySecond = resource._ts;
  // Item timestamps have one-second resolution: wait (on a positive signal) for the clock to pass the early items' second.
  while (Math.floor(Date.now() / 1000) <= earlySecond) {
    await new Promise((done) => setTimeout(done, 50));
  }
  await container.items.create({ id: "t1", ownerId: "owner-1", version: 1 });
  await container.item("d2", "owner-2").replace({ id: "d2", ownerId: "owner-2", version: 3 });

  const { items } = await drain(container.items.getChangeFeedIterator({
    changeFeedStartFrom: ChangeFeedStartFrom.Time(new Date((earlySecond + 1) * 1000)),
  }));
  assert.deepEqual(items.map((i) => i.id).sort(), ["d2", "t1"]);
});

test("each feed range reads its own items and together they read the container", { timeout: 60_000 }, async () => {
  const container = await seeded("ranges", 40);
  const ranges = await container.getFeedRanges();
  assert.equal(ranges.length, 4);
  const seen = [];
  for (const range of ranges) {
    const { items } = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(range), maxItemCount: 5 }));
    seen.push(...items.map((i) => i.id));
  }
  assert.equal(seen.length, 40);
  assert.equal(new Set(seen).size, 40);
});
