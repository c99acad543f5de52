// The administration API as the official JavaScript SDK's ServiceBusAdministrationClient speaks it. That client builds
// https:// URLs whatever the connection string says (UseDevelopmentEmulator is read by the AMQP clients only), so the
// emulator runs its HTTPS listener; the client trusts the emulator's certificate, served at /_emulator/certificate,
// through the pipeline's `agent` option, as a developer would rather than switching certificate checks off.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Agent } from "node:https";
import { ServiceBusAdministrationClient } from "@azure/service-bus";
import { startEmulator, keyName, key } from "../emulator.mjs";

let emulator;
let agent;

before(async () => {
  emulator = await startEmulator([{ name: "configured" }], [], { https: true });
  const pem = await (await fetch(`http://127.0.0.1:${emulator.httpPort}/_emulator/certificate`)).text();
  agent = new Agent({ ca: pem });
});

after(async () => {
  await emulator?.stop();
});

function admin({ secret = key, trusted = true } = {}) {
  return new ServiceBusAdministrationClient(
    `Endpoint=sb://127.0.0.1:${emulator.httpsPort};SharedAccessKeyName=${keyName};SharedAccessKey=${secret}`,
    { ...(trusted ? { agent } : {}), retryOptions: { maxRetries: 0 } });
}

async function all(iterator) {
  const items = [];
  for await (const item of iterator) items.push(item);
  return items;
}

const withClient = (use) => emulator.withClient(use);

test("a queue is created, read, updated, listed and deleted over HTTPS", { timeout: 60_000 }, async () => {
  const client = admin();
  const created = await client.createQueue("js-made", { lockDuration: "PT20S", maxDeliveryCount: 4, userMetadata: "from node" });
  const read = await client.getQueue("js-made");
  const updated = await client.updateQueue({ ...read, maxDeliveryCount: 6 });
  const names = (await all(client.listQueues())).map((q) => q.name);
  const existed = await client.queueExists("js-made");
  await client.deleteQueue("js-made");

  assert.equal(created.name, "js-made");
  assert.equal(read.lockDuration, "PT20S");
  assert.equal(read.maxDeliveryCount, 4);
  assert.equal(read.userMetadata, "from node");
  assert.equal(updated.maxDeliveryCount, 6);
  assert.deepEqual(names, ["configured", "js-made"]);
  assert.equal(existed, true);
  assert.equal(await client.queueExists("js-made"), false);
  await assert.rejects(client.getQueue("js-made"), (error) => error.code === "MessageEntityNotFoundError");
});

test("runtime properties count the active, dead-lettered and scheduled messages a queue holds", { timeout: 60_000 }, async () => {
  const client = admin();
  await client.createQueue("js-counted");
  await withClient(async (messaging) => {
    const sender = messaging.createSender("js-counted");
    await sender.sendMessages([{ body: "a" }, { body: "b" }, { body: "c" }]);
    await sender.scheduleMessages({ body: "later" }, new Date(Date.now() + 3_600_000));
    const receiver = messaging.createReceiver("js-counted");
    const [first] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    await receiver.deadLetterMessage(first, { deadLetterReason: "test" });
  });

  const runtime = await client.getQueueRuntimeProperties("js-counted");

  assert.deepEqual(
    [runtime.activeMessageCount, runtime.deadLetterMessageCount, runtime.scheduledMessageCount, runtime.totalMessageCount],
    [2, 1, 1, 4]);
});

test("a subscription with a SQL rule created at run time gets only the messages it selects", { timeout: 60_000 }, async () => {
  const client = admin();
  await client.createTopic("js-parcels");
  await client.createSubscription("js-parcels", "heavy", { defaultRuleOptions: { name: "heavy", filter: { sqlExpression: "weight > 10" } } });
  await client.createSubscription("js-parcels", "west");
  await client.createRule("js-parcels", "west", "by-region", { correlationId: "c-1", applicationProperties: { region: "west" } });
  await client.deleteRule("js-parcels", "west", "$Default");
  const rules = await all(client.listRules("js-parcels", "heavy"));
  const byRegion = await client.getRule("js-parcels", "west", "by-region");

  const [heavy, west] = await withClient(async (messaging) => {
    await messaging.createSender("js-parcels").sendMessages([
      { body: "light", applicationProperties: { weight: 5, region: "west" }, correlationId: "c-1" },
      { body: "heavy", applicationProperties: { weight: 20, region: "east" } },
    ]);
    const fromHeavy = await messaging.createReceiver("js-parcels", "heavy", { receiveMode: "receiveAndDelete" }).receiveMessages(2, { maxWaitTimeInMs: 3_000 });
    const fromWest = await messaging.createReceiver("js-parcels", "west", { receiveMode: "receiveAndDelete" }).receiveMessages(2, { maxWaitTimeInMs: 3_000 });
    return [fromHeavy, fromWest];
  });

  assert.deepEqual(rules.map((r) => [r.name, r.filter.sqlExpression]), [["heavy", "weight > 10"]]);
  assert.equal(byRegion.filter.correlationId, "c-1");
  assert.equal(byRegion.filter.applicationProperties.region, "west");
  assert.deepEqual(heavy.map((m) => m.body), ["heavy"]);
  assert.deepEqual(west.map((m) => m.body), ["light"]);
  await client.deleteTopic("js-parcels");
});

test("existing entities, refused settings, a wrong key and an untrusted certificate fail as the SDK reports them", { timeout: 60_000 }, async () => {
  await assert.rejects(admin().createQueue("configured"), (error) => error.statusCode === 409 && error.code === "MessageEntityAlreadyExistsError");
  await assert.rejects(admin().createQueue("js-refused", { lockDuration: "PT10M" }),
    (error) => error.statusCode === 400 && /exceeds the allowed maximum of '5' minutes/.test(error.message));
  await assert.rejects(admin({ secret: "guessed" }).getQueue("configured"), (error) => error.statusCode === 401 && error.code === "UnauthorizedRequestError");
  await assert.rejects(admin({ trusted: false }).getQueue("configured"), (error) => /certificate/i.test(`${error.code} ${error.message}`));
  assert.equal(await admin().queueExists("js-refused"), false);
});
