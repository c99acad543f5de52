// A sequence of refused attaches, then normal work, all on one client (one connection): as on
// Azure, a refused link ends that link only. The client holds a shared access signature scoped to
// one topic, as an application given least privilege would, so that an entity outside it is refused
// as unauthorised while everything under the topic is reachable.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { ServiceBusClient } from "@azure/service-bus";
import { startEmulator, keyName, key } from "../emulator.mjs";

const topic = "fleet";
let emulator;

before(async () => {
  emulator = await startEmulator([{ name: "elsewhere" }], [{
    Name: topic,
    Subscriptions: [{ Name: "orders" }, { Name: "by-drone", Properties: { RequiresSession: true } }],
  }]);
});

after(async () => {
  await emulator?.stop();
});

/** A shared access signature for `resource`, as the service defines it: HMAC-SHA256 over the encoded resource and the expiry. */
function sharedAccessSignature(resource, validForSeconds = 3600) {
  const encoded = encodeURIComponent(resource);
  const expiry = Math.floor(Date.now() / 1000) + validForSeconds;
  const signature = createHmac("sha256", key).update(`${encoded}\n${expiry}`).digest("base64");
  return `SharedAccessSignature sr=${encoded}&sig=${encodeURIComponent(signature)}&se=${expiry}&skn=${keyName}`;
}

// The SDK names the condition each refusal carries (core-amqp's ConditionErrorNameMapper); a name without a
// Service Bus code of its own is kept as the message's prefix ("InvalidOperationError: ...").
const isNotFound = (error) => error.code === "MessagingEntityNotFound";
const isNotAllowed = (error) => error.code === "GeneralError" && /^InvalidOperationError: /.test(error.message);
const isUnauthorised = (error) => error.code === "UnauthorizedAccess";

test("refused attaches (not found, not allowed, unauthorised) cost the client nothing: it then sends and receives", { timeout: 120_000 }, async () => {
  const endpoint = `sb://127.0.0.1:${emulator.port}`;
  const token = sharedAccessSignature(`${endpoint}/${topic}`);
  const client = new ServiceBusClient(`Endpoint=${endpoint};SharedAccessSignature=${token};UseDevelopmentEmulator=true`, {
    retryOptions: { maxRetries: 0, timeoutInMs: 15_000 },
  });
  try {
    // amqp:not-found: a subscription that does not exist.
    await assert.rejects(client.createReceiver(topic, "nobody").receiveMessages(1, { maxWaitTimeInMs: 5_000 }), isNotFound);
    // amqp:not-allowed: receiving from a topic, sending to a subscription, a plain receiver on a session-enabled
    // subscription.
    await assert.rejects(client.createReceiver(topic).receiveMessages(1, { maxWaitTimeInMs: 5_000 }), isNotAllowed);
    await assert.rejects(client.createSender(`${topic}/Subscriptions/orders`).sendMessages({ body: "nope" }), isNotAllowed);
    await assert.rejects(client.createReceiver(topic, "by-drone").receiveMessages(1, { maxWaitTimeInMs: 5_000 }), isNotAllowed);
    // A session receiver on a subscription without sessions is refused with amqp:not-allowed too (asserted on the wire
    // in WireConditionTests); this SDK reads any session attach answered without the session it asked for as
    // SessionCannotBeLocked, before it looks at the refusal's condition.
    await assert.rejects(client.acceptSession(topic, "orders", "s-1"), (error) => error.code === "SessionCannotBeLocked");
    // $cbs 401: the token does not cover an entity outside the topic.
    await assert.rejects(client.createSender("elsewhere").sendMessages({ body: "nope" }), isUnauthorised);

    const sender = client.createSender(topic);
    await sender.sendMessages([{ body: "after the refusals" }, { body: "in a session", sessionId: "drone-1" }]);
    const receiver = client.createReceiver(topic, "orders");
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(message.body, "after the refusals");
    await receiver.completeMessage(message);
    const sessionReceiver = await client.acceptNextSession(topic, "by-drone");
    const [inSession] = await sessionReceiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(inSession.body, "in a session");
    await sessionReceiver.completeMessage(inSession);
  } finally {
    await client.close();
  }
});
