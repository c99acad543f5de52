// Message sessions as the official JavaScript SDK sees them: session receivers (acceptSession,
// acceptNextSession), subscribe on a session receiver, session state and lock renewal. Each test
// uses its own session-enabled queue so that nothing one test leaves behind changes another.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { ServiceBusClient } from "@azure/service-bus";
import { startEmulator } from "../emulator.mjs";

const queues = ["accept", "acceptnext", "subscribe", "state", "renew", "locked", "nosession", "peek", "empty"];
const topic = "convoys";
let emulator;

before(async () => {
  emulator = await startEmulator(
    [...queues.map((name) => ({ name, requiresSession: true, lockDuration: "PT30S" })), { name: "plain" }],
    [{ Name: topic, Subscriptions: [{ Name: "by-drone", Properties: { RequiresSession: true } }] }],
  );
});

after(async () => {
  await emulator?.stop();
});

async function withClient(use, retryOptions = { maxRetries: 1, timeoutInMs: 15_000 }) {
  const client = new ServiceBusClient(emulator.connectionString, { retryOptions });
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

async function receiveAll(receiver, count) {
  const received = [];
  while (received.length < count) {
    const page = await receiver.receiveMessages(count - received.length, { maxWaitTimeInMs: 10_000 });
    assert.ok(page.length > 0, `only ${received.length} of ${count} arrived`);
    received.push(...page);
  }
  return received;
}

test("acceptSession receives that session's messages only, in order, and names the session", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    await client.createSender("accept").sendMessages([
      { body: "a-1", sessionId: "A" },
      { body: "b-1", sessionId: "B" },
      { body: "a-2", sessionId: "A" },
      { body: "a-3", sessionId: "A" },
    ]);
    const receiver = await client.acceptSession("accept", "A");
    assert.equal(receiver.sessionId, "A");
    assert.ok(receiver.sessionLockedUntilUtc > new Date(), `locked until ${receiver.sessionLockedUntilUtc}`);
    const received = await receiveAll(receiver, 3);
    for (const message of received) await receiver.completeMessage(message);
    assert.deepEqual(received.map((m) => m.body), ["a-1", "a-2", "a-3"]);
    assert.deepEqual(received.map((m) => m.sessionId), ["A", "A", "A"]);
    await receiver.close();

    const other = await client.acceptSession("accept", "B");
    const [b] = await other.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(b.body, "b-1");
    await other.completeMessage(b);
  });
});

test("acceptNextSession takes a session with messages that nobody holds and names it", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    await client.createSender("acceptnext").sendMessages([{ body: "first", sessionId: "older" }, { body: "second", sessionId: "newer" }]);
    const first = await client.acceptNextSession("acceptnext");
    const second = await client.acceptNextSession("acceptnext");
    assert.deepEqual([first.sessionId, second.sessionId], ["older", "newer"]);
    const [one] = await first.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    const [two] = await second.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.deepEqual([one.body, two.body], ["first", "second"]);
    await first.completeMessage(one);
    await second.completeMessage(two);
  });
});

test("acceptNextSession on a subscription that requires sessions names the session of the copy", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    await client.createSender(topic).sendMessages({ body: "convoy", sessionId: "drone-7" });
    const receiver = await client.acceptNextSession(topic, "by-drone");
    assert.equal(receiver.sessionId, "drone-7");
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(message.body, "convoy");
    await receiver.completeMessage(message);
  });
});

test("subscribe on a session receiver hands the session's messages over in order, each completed as it is handled", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    await client.createSender("subscribe").sendMessages([1, 2, 3].map((i) => ({ body: `step-${i}`, sessionId: "S" })));
    const receiver = await client.acceptSession("subscribe", "S");
    const bodies = [];
    await new Promise((resolve, reject) => {
      receiver.subscribe({
        async processMessage(message) {
          bodies.push(message.body);
          await receiver.completeMessage(message);
          if (bodies.length === 3) resolve();
        },
        async processError(args) {
          reject(args.error);
        },
      }, { autoCompleteMessages: false });
    });
    await receiver.close();
    assert.deepEqual(bodies, ["step-1", "step-2", "step-3"]);

    // A marker sent afterwards is all there is: the subscribed messages were completed.
    await client.createSender("subscribe").sendMessages({ body: "marker", sessionId: "S" });
    const again = await client.acceptSession("subscribe", "S");
    const [next] = await again.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(next.body, "marker");
    await again.completeMessage(next);
  });
});

test("session state is set, read back by a later receiver of the session, and replaced", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    const receiver = await client.acceptSession("state", "st");
    assert.equal(await receiver.getSessionState(), null);
    await receiver.setSessionState({ step: 2, of: 3 });
    await receiver.close();

    const again = await client.acceptSession("state", "st");
    assert.deepEqual(await again.getSessionState(), { step: 2, of: 3 });
    await again.setSessionState({ step: 3, of: 3 });
    assert.deepEqual(await again.getSessionState(), { step: 3, of: 3 });
  });
});

test("renewSessionLock moves the session lock forward", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    await client.createSender("renew").sendMessages({ body: "long job", sessionId: "r" });
    const receiver = await client.acceptSession("renew", "r", { maxAutoLockRenewalDurationInMs: 0 });
    const original = receiver.sessionLockedUntilUtc;
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 20)); // the emulator's clock has moved on, however little
    const renewed = await receiver.renewSessionLock();
    assert.ok(renewed > original, `renewed ${renewed.toISOString()} not after ${original.toISOString()}`);
    assert.equal(receiver.sessionLockedUntilUtc.getTime(), renewed.getTime());
    await receiver.completeMessage(message);
  });
});

test("a session held by one receiver cannot be accepted by another", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    await client.createSender("locked").sendMessages({ body: "mine", sessionId: "L" });
    const holder = await client.acceptSession("locked", "L");
    await assert.rejects(client.acceptSession("locked", "L"), (error) => error.code === "SessionCannotBeLocked");
    const [message] = await holder.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(message.body, "mine");
    await holder.completeMessage(message);
  });
});

test("a message without a sessionId is refused by a session-enabled queue", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    const sender = client.createSender("nosession");
    // amqp:not-allowed, which the SDK names InvalidOperationError.
    await assert.rejects(sender.sendMessages({ body: "no session" }), (error) => /InvalidOperationError/.test(error.message) && /SessionId was not set/.test(error.message));
    await sender.sendMessages({ body: "marker", sessionId: "n" });
    const receiver = await client.acceptNextSession("nosession");
    const [next] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(next.body, "marker");
    await receiver.completeMessage(next);
  });
});

test("peekMessages on a session receiver shows that session only", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    await client.createSender("peek").sendMessages([
      { body: "p-1", sessionId: "P" },
      { body: "q-1", sessionId: "Q" },
      { body: "p-2", sessionId: "P" },
    ]);
    const receiver = await client.acceptSession("peek", "P");
    const peeked = await receiver.peekMessages(10);
    assert.deepEqual(peeked.map((m) => m.body), ["p-1", "p-2"]);
  });
});

test("acceptNextSession with no session available fails with ServiceTimeout and the client carries on", { timeout: 60_000 }, async () => {
  await withClient(async (client) => {
    await assert.rejects(client.acceptNextSession("empty"), (error) => error.code === "ServiceTimeout");
    await client.createSender("empty").sendMessages({ body: "now there is one", sessionId: "late" });
    const receiver = await client.acceptNextSession("empty");
    assert.equal(receiver.sessionId, "late");
  }, { maxRetries: 0, timeoutInMs: 5_000 });
});
