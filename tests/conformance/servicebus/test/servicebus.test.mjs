// The Service Bus emulator as the official JavaScript SDK sees it. Each test uses its own queue so
// that nothing one test leaves behind changes another.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startEmulator } from "../emulator.mjs";

const queues = ["roundtrip", "peekfirst", "renew", "refusal", "deadletter", "batch", "receivedelete", "abandon", "scheduled", "cancelscheduled", "scheduledsend"];
let emulator;

before(async () => {
  emulator = await startEmulator(queues.map((name) => ({ name, lockDuration: "PT30S", maxDeliveryCount: 3 })));
});

after(async () => {
  await emulator?.stop();
});

const withClient = (use) => emulator.withClient(use);

test("a message sent is received with its properties and completed", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    const sender = client.createSender("roundtrip");
    await sender.sendMessages({
      body: { deliveryId: "d-1" },
      messageId: "d-1",
      correlationId: "corr-1",
      subject: "delivery",
      contentType: "application/json",
      applicationProperties: { operation: "delivery", attempt: 3 },
    });
    const receiver = client.createReceiver("roundtrip");
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.ok(message, "no message received");
    assert.deepEqual(message.body, { deliveryId: "d-1" });
    assert.equal(message.messageId, "d-1");
    assert.equal(message.correlationId, "corr-1");
    assert.equal(message.subject, "delivery");
    assert.equal(message.contentType, "application/json");
    assert.equal(message.applicationProperties.operation, "delivery");
    assert.equal(message.applicationProperties.attempt, 3);
    assert.equal(message.deliveryCount, 0);
    assert.ok(message.lockedUntilUtc > new Date(), `locked until ${message.lockedUntilUtc}`);
    await receiver.completeMessage(message);

    // A later marker comes next: the completed message is gone.
    await sender.sendMessages({ body: "marker" });
    const [next] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(next.body, "marker");
    await receiver.completeMessage(next);
  });
});

test("a peek as a client's first operation on an entity is authorised", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    await client.createSender("peekfirst").sendMessages({ body: "peek me" });
  });
  // A fresh client: its only token for the entity is the one it puts for the management node.
  await withClient(async (client) => {
    const peeked = await client.createReceiver("peekfirst").peekMessages(5);
    assert.equal(peeked.length, 1);
    assert.equal(peeked[0].body, "peek me");
  });
});

test("a renewed lock moves its expiry forward and the message still completes", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    await client.createSender("renew").sendMessages({ body: "long job" });
    const receiver = client.createReceiver("renew");
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    const original = message.lockedUntilUtc;
    const renewed = await receiver.renewMessageLock(message);
    assert.ok(renewed >= original, `renewed ${renewed.toISOString()} before ${original.toISOString()}`);
    await receiver.completeMessage(message);
  });
});

test("a refused link ends only that link: the same client then sends to a queue that exists", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    await assert.rejects(
      client.createSender("no-such-queue").sendMessages({ body: "lost" }),
      (error) => error.code === "MessagingEntityNotFoundError" || /could not be found/.test(error.message),
    );
    await client.createSender("refusal").sendMessages({ body: "after the refusal" });
    const [message] = await client.createReceiver("refusal").receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(message.body, "after the refusal");
  });
});

test("a dead-lettered message keeps its reason and is read from the dead-letter sub-queue", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    await client.createSender("deadletter").sendMessages({ body: "poison" });
    const receiver = client.createReceiver("deadletter");
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    await receiver.deadLetterMessage(message, { deadLetterReason: "Invalid", deadLetterErrorDescription: "no owner" });
    const dlq = client.createReceiver("deadletter", { subQueueType: "deadLetter" });
    const [dead] = await dlq.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(dead.body, "poison");
    assert.equal(dead.deadLetterReason, "Invalid");
    assert.equal(dead.deadLetterErrorDescription, "no owner");
    await dlq.completeMessage(dead);
  });
});

test("an abandoned message comes back with its delivery count up", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    await client.createSender("abandon").sendMessages({ body: "retry me" });
    const receiver = client.createReceiver("abandon");
    const [first] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    await receiver.abandonMessage(first);
    const [second] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(second.body, "retry me");
    assert.equal(second.deliveryCount, first.deliveryCount + 1);
    await receiver.completeMessage(second);
  });
});

test("a batch is delivered as its separate messages, in order", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    const sender = client.createSender("batch");
    const batch = await sender.createMessageBatch();
    for (let i = 0; i < 10; i++) {
      assert.ok(batch.tryAddMessage({ body: `m${i}`, messageId: `m${i}` }), `message ${i} did not fit`);
    }
    await sender.sendMessages(batch);
    const receiver = client.createReceiver("batch", { receiveMode: "receiveAndDelete" });
    const received = [];
    while (received.length < 10) {
      const page = await receiver.receiveMessages(10 - received.length, { maxWaitTimeInMs: 10_000 });
      assert.ok(page.length > 0, `only ${received.length} of 10 arrived`);
      received.push(...page);
    }
    assert.deepEqual(received.map((m) => m.body), Array.from({ length: 10 }, (_, i) => `m${i}`));
  });
});

test("receive-and-delete removes a message as it is delivered", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    const sender = client.createSender("receivedelete");
    await sender.sendMessages({ body: "once" });
    const receiver = client.createReceiver("receivedelete", { receiveMode: "receiveAndDelete" });
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(message.body, "once");
    await sender.sendMessages({ body: "marker" });
    const [next] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(next.body, "marker");
  });
});

// Scheduled messages: the emulator runs on the real clock here, so a message is scheduled a couple of seconds
// ahead and awaited with a generous bound; that it was held back is read from its enqueued time, not from a delay.
test("scheduleMessages returns sequence numbers and the message arrives once its time has come", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    const sender = client.createSender("scheduled");
    const at = new Date(Date.now() + 2_000);
    const sequenceNumbers = await sender.scheduleMessages([{ body: "later", messageId: "later" }, { body: "later too" }], at);
    assert.equal(sequenceNumbers.length, 2);
    assert.deepEqual(sequenceNumbers.map((n) => n.toNumber()), [1, 2]);

    const receiver = client.createReceiver("scheduled", { receiveMode: "receiveAndDelete" });
    const received = [];
    while (received.length < 2) {
      const page = await receiver.receiveMessages(2 - received.length, { maxWaitTimeInMs: 30_000 });
      assert.ok(page.length > 0, `only ${received.length} of 2 arrived`);
      received.push(...page);
    }
    assert.deepEqual(received.map((m) => m.body), ["later", "later too"]);
    assert.equal(received[0].messageId, "later");
    for (const message of received) {
      assert.equal(message.scheduledEnqueueTimeUtc?.getTime(), at.getTime());
      assert.ok(message.enqueuedTimeUtc.getTime() >= at.getTime(), `enqueued ${message.enqueuedTimeUtc.toISOString()} before ${at.toISOString()}`);
    }
  });
});

test("cancelScheduledMessages removes a scheduled message: peek no longer shows it and it is never received", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    const sender = client.createSender("cancelscheduled");
    const at = new Date(Date.now() + 60 * 60_000);
    const [cancelled, kept] = await sender.scheduleMessages([{ body: "cancel me" }, { body: "keep me" }], at);
    await sender.cancelScheduledMessages(cancelled);

    const peeked = await client.createReceiver("cancelscheduled").peekMessages(10);
    assert.deepEqual(peeked.map((m) => m.body), ["keep me"]);
    assert.equal(peeked[0].state, "scheduled");
    assert.equal(peeked[0].sequenceNumber.toNumber(), kept.toNumber());
    assert.equal(peeked[0].scheduledEnqueueTimeUtc?.getTime(), at.getTime());

    // Neither scheduled message is receivable: a marker sent after them is what arrives.
    await sender.sendMessages({ body: "marker" });
    const receiver = client.createReceiver("cancelscheduled", { receiveMode: "receiveAndDelete" });
    const [next] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(next.body, "marker");
    await sender.cancelScheduledMessages(kept);
    const after = await client.createReceiver("cancelscheduled").peekMessages(10);
    assert.equal(after.length, 0);
  });
});

test("a message sent with scheduledEnqueueTimeUtc is enqueued at that time", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    const sender = client.createSender("scheduledsend");
    const at = new Date(Date.now() + 2_000);
    await sender.sendMessages({ body: "timed", scheduledEnqueueTimeUtc: at });
    const receiver = client.createReceiver("scheduledsend");
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 30_000 });
    assert.ok(message, "the scheduled message did not arrive");
    assert.equal(message.body, "timed");
    assert.equal(message.state, "active");
    assert.equal(message.scheduledEnqueueTimeUtc?.getTime(), at.getTime());
    assert.ok(message.enqueuedTimeUtc.getTime() >= at.getTime(), `enqueued ${message.enqueuedTimeUtc.toISOString()} before ${at.toISOString()}`);
    await receiver.completeMessage(message);
  });
});
