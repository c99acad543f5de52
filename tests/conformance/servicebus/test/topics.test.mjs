// Topics and subscriptions as the official JavaScript SDK sees them.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startEmulator } from "../emulator.mjs";

const topic = "deliveries";
let emulator;

before(async () => {
  emulator = await startEmulator([], [{
    Name: topic,
    Properties: { DefaultMessageTimeToLive: "PT1H" },
    Subscriptions: [
      { Name: "all", Properties: { LockDuration: "PT30S", MaxDeliveryCount: 3 } },
      { Name: "urgent", Rules: [{ Name: "high", Properties: { FilterType: "Sql", SqlFilter: { SqlExpression: "priority = 'high' AND sys.Label LIKE 'drone%'" } } }] },
    ],
  }, {
    Name: "ruledtopic",
    Subscriptions: [{ Name: "ruled" }],
  }]);
});

after(async () => {
  await emulator?.stop();
});

const withClient = (use) => emulator.withClient(use);

test("a message sent to a topic is received from its subscriptions; a filtered one leaves others out", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    const sender = client.createSender(topic);
    await sender.sendMessages([
      { body: "low", subject: "drone-1", applicationProperties: { priority: "low" } },
      { body: "marker", subject: "drone-2", applicationProperties: { priority: "high" } },
    ]);

    const all = client.createReceiver(topic, "all");
    const everything = await all.receiveMessages(2, { maxWaitTimeInMs: 10_000 });
    const bodies = everything.map((m) => m.body);
    for (const message of everything) await all.completeMessage(message);
    if (bodies.length < 2) {
      const [rest] = await all.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
      bodies.push(rest.body);
      await all.completeMessage(rest);
    }
    assert.deepEqual(bodies, ["low", "marker"]);

    // The later marker arrives first: the low-priority message never reached the filtered subscription.
    const urgent = client.createReceiver(topic, "urgent");
    const [first] = await urgent.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(first.body, "marker");
    await urgent.completeMessage(first);
    assert.equal((await urgent.peekMessages(10)).length, 0);
  });
});

test("a rule manager lists the default rule, adds a SQL rule and removes the default one", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    const rules = client.createRuleManager("ruledtopic", "ruled");
    const initial = [];
    for await (const rule of rules.listRules()) initial.push(rule.name);
    assert.deepEqual(initial, ["$Default"]);

    await rules.createRule("heavy", { sqlExpression: "weight > 10" });
    await rules.deleteRule("$Default");
    const current = [];
    for await (const rule of rules.listRules()) current.push(rule);
    assert.deepEqual(current.map((r) => r.name), ["heavy"]);
    assert.equal(current[0].filter.sqlExpression, "weight > 10");

    const sender = client.createSender("ruledtopic");
    await sender.sendMessages([{ body: "light", applicationProperties: { weight: 1 } }, { body: "heavy", applicationProperties: { weight: 20 } }]);
    const receiver = client.createReceiver("ruledtopic", "ruled");
    const [first] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(first.body, "heavy");
    await receiver.completeMessage(first);
  });
});

test("receiving from an unknown subscription is refused and the client keeps working", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    const missing = client.createReceiver(topic, "nobody");
    await assert.rejects(() => missing.receiveMessages(1, { maxWaitTimeInMs: 5_000 }), (error) => error.code === "MessagingEntityNotFoundError" || /could not be found/.test(error.message));
    const sender = client.createSender(topic);
    await sender.sendMessages({ body: "still here" });
    const receiver = client.createReceiver(topic, "all");
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(message.body, "still here");
    await receiver.completeMessage(message);
  });
});
