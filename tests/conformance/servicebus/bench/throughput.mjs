// End-to-end throughput through the official JavaScript SDK (@azure/service-bus): S senders send batches of
// B messages and R receivers (streaming, up to 50 messages in hand each) complete each message, for N seconds against one queue.
// Prints one line of JSON: { sent, completed, seconds, messagesPerSecond } (completed per second).
// Lives beside test/, not in it, so the test runner does not pick it up; tests/Benchmarks/ServiceBus starts it.
//
//   node bench/throughput.mjs --connection-string "<...;UseDevelopmentEmulator=true>" --queue bench
//        [--seconds 10] [--senders 4] [--receivers 4] [--batch 100] [--warmup-seconds 2]
import { ServiceBusClient } from "@azure/service-bus";

function option(name, fallback) {
  const index = process.argv.indexOf(name);
  return index >= 0 && index + 1 < process.argv.length ? process.argv[index + 1] : fallback;
}

const connectionString = option("--connection-string", process.env.SERVICEBUS_CONNECTION_STRING);
const queue = option("--queue", "bench");
const seconds = Number(option("--seconds", "10"));
const warmupSeconds = Number(option("--warmup-seconds", "2"));
const senderCount = Number(option("--senders", "4"));
const receiverCount = Number(option("--receivers", "4"));
const batchSize = Number(option("--batch", "100"));
const receiveBatch = 50;
if (!connectionString) {
  console.error("--connection-string (or SERVICEBUS_CONNECTION_STRING) is required");
  process.exit(2);
}

const client = new ServiceBusClient(connectionString);
const senders = Array.from({ length: senderCount }, () => client.createSender(queue));
const receivers = Array.from({ length: receiverCount }, () => client.createReceiver(queue, { receiveMode: "peekLock" }));

let counting = false;
let sent = 0;
let completed = 0;
let stopSending = false;
let stopReceiving = false;
let next = 0;
let outstanding = 0; // sent and not yet completed: senders wait above maxBacklog, so the queue stays bounded
const maxBacklog = 5000;

async function sendLoop(sender) {
  while (!stopSending) {
    if (outstanding > maxBacklog) {
      await new Promise((done) => setTimeout(done, 1));
      continue;
    }
    const batch = [];
    for (let i = 0; i < batchSize; i++, next++) {
      batch.push({ body: { deliveryId: String(next), payload: "0123456789abcdef0123456789abcdef" }, contentType: "application/json" });
    }
    await sender.sendMessages(batch);
    outstanding += batch.length;
    if (counting) sent += batch.length;
  }
}

// Streaming receive (subscribe): a loop of receiveMessages() calls, each ending in a credit drain, reached only
// tens of messages/s against the emulator; subscribe() keeps credit flowing, as the SDK recommends for throughput.
function receiveLoop(receiver) {
  return new Promise((done, fail) => {
    const subscription = receiver.subscribe({
      async processMessage(message) {
        await receiver.completeMessage(message);
        outstanding--;
        if (counting) completed++;
      },
      async processError(args) { fail(args.error); },
    }, { autoCompleteMessages: false, maxConcurrentCalls: receiveBatch });
    const timer = setInterval(() => {
      if (stopReceiving) {
        clearInterval(timer);
        subscription.close().then(done, fail);
      }
    }, 20);
  });
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
try {
  // Open every link before the clock starts.
  await Promise.all(senders.map((s) => s.sendMessages({ body: "warm" })));
  const loops = [...senders.map(sendLoop), ...receivers.map(receiveLoop)];
  await sleep(warmupSeconds * 1000);
  counting = true;
  const started = process.hrtime.bigint();
  await sleep(seconds * 1000);
  counting = false;
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  stopSending = true;
  stopReceiving = true;
  await Promise.all(loops);
  console.log(JSON.stringify({ sent, completed, seconds: elapsed, messagesPerSecond: completed / elapsed, sentPerSecond: sent / elapsed, senders: senderCount, receivers: receiverCount }));
} finally {
  await Promise.all([...senders, ...receivers].map((l) => l.close()));
  await client.close();
}
