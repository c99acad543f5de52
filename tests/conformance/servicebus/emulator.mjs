// Starts the Service Bus emulator the way the chart does (its own process, a Config.json in the
// official emulator's shape) and stops it when the tests end or this process exits.
import { spawn } from "node:child_process";
import { ServiceBusClient } from "@azure/service-bus";
import { mkdtempSync, writeFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const repository = resolve(here, "../../..");

export const keyName = "RootManageSharedAccessKey";
export const key = "SAS_KEY_VALUE";

function emulatorAssembly() {
  // The build configuration to take the emulator from (.ci/run builds Release); Debug by default.
  const configuration = (process.env.BUILD_CONFIGURATION ?? "Debug").toLowerCase();
  const configured = process.env.SERVICEBUS_EMULATOR_DLL;
  const path = configured ?? join(repository, `artifacts/bin/DroneDelivery.Emulators.ServiceBus/${configuration}/DroneDelivery.Emulators.ServiceBus.dll`);
  if (!existsSync(path)) {
    throw new Error(`${path} does not exist: build the solution first (dotnet build DroneDelivery.sln, with -c Release if BUILD_CONFIGURATION=Release) or set SERVICEBUS_EMULATOR_DLL.`);
  }
  return path;
}

/**
 * Starts an emulator with the given queues ({ name, lockDuration, maxDeliveryCount, requiresSession }) and topics
 * (in Config.json's shape: { Name, Subscriptions: [{ Name, Properties, Rules }] }). With { https: true } it also
 * serves its HTTP endpoints (the administration API) over TLS, on a port of its own.
 */
export async function startEmulator(queues, topics = [], { https = false } = {}) {
  const folder = mkdtempSync(join(tmpdir(), "sb-conformance-"));
  const config = join(folder, "Config.json");
  writeFileSync(config, JSON.stringify({
    UserConfig: {
      Namespaces: [{
        Name: "sbemulatorns",
        Queues: queues.map((q) => ({
          Name: q.name,
          Properties: { LockDuration: q.lockDuration ?? "PT30S", MaxDeliveryCount: q.maxDeliveryCount ?? 10, RequiresSession: q.requiresSession ?? false },
        })),
        Topics: topics,
      }],
      Logging: { Type: "Console" },
    },
  }));

  const httpsArguments = https ? ["--https-port", "0"] : [];
  const child = spawn("dotnet", [emulatorAssembly(), "--port", "0", "--http-port", "0", ...httpsArguments, "--host", "127.0.0.1", "--config", config], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stop = () => { if (child.exitCode === null) child.kill("SIGTERM"); };
  process.once("exit", stop);

  const output = [];
  let httpPort;
  let httpsPort;
  const port = await new Promise((resolvePort, reject) => {
    const timer = setTimeout(() => reject(new Error(`The emulator did not start within 60 s:\n${output.join("\n")}`)), 60_000);
    const onLine = (chunk) => {
      for (const line of chunk.toString().split("\n")) {
        output.push(line);
        const ready = /^Service Bus emulator ready: amqp=[^:]+:(\d+)/.exec(line);
        if (ready) {
          httpPort = Number(/ http=http:\/\/[^:]+:(\d+)/.exec(line)?.[1]);
          httpsPort = Number(/ https=https:\/\/[^:]+:(\d+)/.exec(line)?.[1]);
          clearTimeout(timer);
          resolvePort(Number(ready[1]));
        }
      }
    };
    child.stdout.on("data", onLine);
    child.stderr.on("data", onLine);
    child.once("exit", (code) => { clearTimeout(timer); reject(new Error(`The emulator exited with ${code}:\n${output.join("\n")}`)); });
  });

  return {
    port,
    httpPort,
    httpsPort,
    connectionString: `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=${keyName};SharedAccessKey=${key};UseDevelopmentEmulator=true`,
    output,
    /** Runs `use` with a client of this emulator (one quick retry, 15 s a try), closing the client after. */
    async withClient(use) {
      const client = new ServiceBusClient(this.connectionString, { retryOptions: { maxRetries: 1, timeoutInMs: 15_000 } });
      try {
        return await use(client);
      } finally {
        await client.close();
      }
    },
    async stop() {
      stop();
      await new Promise((done) => (child.exitCode !== null ? done() : child.once("exit", done)));
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
