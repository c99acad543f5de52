using System.CommandLine;
using System.ComponentModel;
using System.Diagnostics;
using System.Globalization;
using System.Text.Json;
using System.Threading.Channels;
using Azure.Messaging.ServiceBus;
using DroneDelivery.Emulators.ServiceBus;
using DroneDelivery.Benchmarks.ServiceBus;
using DroneDelivery.TestSupport;

// End to end: producers send messages in batches, R receivers receive and complete them; the clock runs from the
// first send to the last completion. The baseline runs the same pattern over an in-process channel (send = write,
// receive = read, complete = acknowledge), so the ratio says what the AMQP round trips and the broker cost.
// Further rows: a topic with three subscriptions (every message delivered to each), and the official JavaScript
// SDK (tests/conformance/servicebus/bench/throughput.mjs, run with Node against an in-process emulator).
// The client is the official .NET SDK (Azure.Messaging.ServiceBus), as the services use it. The run exits with 1
// when its end-to-end queue throughput is below the target.
//
//   dotnet run -c Release --project tests/Benchmarks/ServiceBus -- [--messages 20000] [--runs 3] [--js-seconds 10]
var (parse, exitCode) = await BenchmarkOptions.ParseAsync(BenchmarkCommand.Build(), args);
if (parse is null)
{
    return exitCode;
}

var messages = parse.GetValue(BenchmarkCommand.Messages);
var runs = parse.GetValue(BenchmarkCommand.Runs);
var jsSeconds = parse.GetValue(BenchmarkCommand.JsSeconds);
const int Producers = 4;
const int BatchSize = 100;
const int ReceiveBatch = 50;
const int Prefetch = 200;
const int Subscriptions = 3;
const int ReceiversPerSubscription = 2;
const int JsReceivers = 4;
const double TargetMessagesPerSecond = 5_000;

var loadBefore = LoadAverage();
Console.WriteLine($"Service Bus emulator benchmark: {messages} messages per run, {Producers} producers (batches of {BatchSize}), best of {runs} runs, {Environment.ProcessorCount} cores");
Console.WriteLine($"Load average (1, 5, 15 min) at start: {loadBefore}");
Console.WriteLine();
Console.WriteLine("| scenario | receivers | channel baseline (msg/s) | emulator (msg/s) | emulator / baseline | CPU per message, client + broker (µs) |");
Console.WriteLine("|---|---:|---:|---:|---:|---:|");
var slowest = double.MaxValue;
foreach (var receivers in new[] { 1, 16 })
{
    await EmulatorRunAsync(receivers, Math.Min(messages, 2_000)); // warm-up
    await ChannelRunAsync(receivers, Math.Min(messages, 2_000));
    var baseline = 0.0;
    var emulator = 0.0;
    var cpu = double.MaxValue;
    for (var run = 0; run < runs; run++)
    {
        baseline = Math.Max(baseline, await ChannelRunAsync(receivers, messages));
        var before = Process.GetCurrentProcess().TotalProcessorTime;
        emulator = Math.Max(emulator, await EmulatorRunAsync(receivers, messages));
        cpu = Math.Min(cpu, (Process.GetCurrentProcess().TotalProcessorTime - before).TotalMicroseconds / messages);
    }

    slowest = Math.Min(slowest, emulator);
    Console.WriteLine(Invariant($"| queue, .NET SDK | {receivers} | {baseline:N0} | {emulator:N0} | {emulator / baseline:0.0000} | {cpu:N0} |"));
}

{
    // Topic: every message goes to each of the three subscriptions; the figures are messages sent per second and
    // deliveries completed per second across the subscriptions (3 per message), both over the same clock.
    await TopicRunAsync(Math.Min(messages, 2_000)); // warm-up
    await ChannelFanOutRunAsync(Math.Min(messages, 2_000));
    var baseline = 0.0;
    var emulator = 0.0;
    var cpu = double.MaxValue;
    for (var run = 0; run < runs; run++)
    {
        baseline = Math.Max(baseline, await ChannelFanOutRunAsync(messages));
        var before = Process.GetCurrentProcess().TotalProcessorTime;
        emulator = Math.Max(emulator, await TopicRunAsync(messages));
        cpu = Math.Min(cpu, (Process.GetCurrentProcess().TotalProcessorTime - before).TotalMicroseconds / (messages * Subscriptions));
    }

    Console.WriteLine(Invariant($"| topic, {Subscriptions} subscriptions, .NET SDK: sent / deliveries completed | {Subscriptions} × {ReceiversPerSubscription} | {baseline:N0} / {baseline * Subscriptions:N0} | {emulator:N0} / {emulator * Subscriptions:N0} | {emulator / baseline:0.0000} | {cpu:N0} per delivery |"));
}

{
    var (row, _) = await JavaScriptRunAsync();
    Console.WriteLine(row);
}

var loadAfter = LoadAverage();
Console.WriteLine();
Console.WriteLine($"Load average (1, 5, 15 min) at end: {loadAfter}");
if (slowest < TargetMessagesPerSecond)
{
    Console.WriteLine(Invariant($"FAILED: the .NET SDK end to end reached {slowest:N0} msg/s with the slower receiver count; the target is {TargetMessagesPerSecond:N0} msg/s."));
    return 1;
}

Console.WriteLine(Invariant($"Target met: the .NET SDK end to end is at least {TargetMessagesPerSecond:N0} msg/s ({slowest:N0} msg/s with the slower receiver count)."));
return 0;

async Task<(string Row, double MessagesPerSecond)> JavaScriptRunAsync()
{
    var scenario = "queue, official JavaScript SDK (@azure/service-bus)";
    var folder = FindConformanceFolder();
    if (folder is null || !File.Exists(Path.Combine(folder, "node_modules", "@azure", "service-bus", "package.json")))
    {
        return ($"| {scenario} | {JsReceivers} | — | not run: @azure/service-bus is not installed (run `npm ci` in tests/conformance/servicebus) | — | — |", 0);
    }

    var baseline = 0.0;
    for (var run = 0; run < runs; run++)
    {
        baseline = Math.Max(baseline, await ChannelRunAsync(JsReceivers, messages));
    }

    await using var emulator = await ServiceBusEmulator.StartAsync(new ServiceBusEmulatorOptions
    {
        HttpPort = null,
        Queues = [new QueueOptions { Name = "bench", LockDuration = TimeSpan.FromMinutes(5) }],
    });
    var start = new ProcessStartInfo("node")
    {
        WorkingDirectory = folder,
        RedirectStandardOutput = true,
        RedirectStandardError = true,
        UseShellExecute = false,
    };
    foreach (var argument in new[]
    {
        Path.Combine("bench", "throughput.mjs"), "--connection-string", emulator.ConnectionString, "--queue", "bench",
        "--seconds", jsSeconds.ToString(CultureInfo.InvariantCulture), "--senders", Producers.ToString(CultureInfo.InvariantCulture),
        "--receivers", JsReceivers.ToString(CultureInfo.InvariantCulture), "--batch", BatchSize.ToString(CultureInfo.InvariantCulture),
    })
    {
        start.ArgumentList.Add(argument);
    }

    Process node;
    try
    {
        node = Process.Start(start) ?? throw new Win32Exception("node did not start");
    }
    catch (Win32Exception)
    {
        return ($"| {scenario} | {JsReceivers} | {baseline:N0} | not run: Node.js (`node`) is not installed | — | — |", 0);
    }

    using (node)
    {
        var cpuBefore = Process.GetCurrentProcess().TotalProcessorTime;
        var output = node.StandardOutput.ReadToEndAsync();
        var errors = node.StandardError.ReadToEndAsync();
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(jsSeconds + 120));
        try
        {
            await node.WaitForExitAsync(timeout.Token);
        }
        catch (OperationCanceledException)
        {
            node.Kill(entireProcessTree: true);
            return ($"| {scenario} | {JsReceivers} | {baseline:N0} | not run: the Node script did not finish in time | — | — |", 0);
        }

        var brokerCpu = Process.GetCurrentProcess().TotalProcessorTime - cpuBefore;
        var line = (await output).Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries).LastOrDefault(l => l.StartsWith('{'));
        if (node.ExitCode != 0 || line is null)
        {
            var error = (await errors).Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries).FirstOrDefault() ?? $"exit code {node.ExitCode}";
            return ($"| {scenario} | {JsReceivers} | {baseline:N0} | failed: {error.Replace('|', '/')} | — | — |", 0);
        }

        using var json = JsonDocument.Parse(line);
        var rate = json.RootElement.GetProperty("messagesPerSecond").GetDouble();
        var completed = json.RootElement.GetProperty("completed").GetInt64();
        var metrics = emulator.GetMetrics()["bench"];
        var cpu = brokerCpu.TotalMicroseconds / Math.Max(1, metrics.Counters.Completed);
        return (Invariant($"| {scenario}, {jsSeconds} s | {JsReceivers} | {baseline:N0} | {rate:N0} | {rate / baseline:0.0000} | {cpu:N0} (broker only) |"), rate);
    }
}

string? FindConformanceFolder()
{
    foreach (var origin in new[] { Environment.CurrentDirectory, AppContext.BaseDirectory })
    {
        for (var directory = new DirectoryInfo(origin); directory is not null; directory = directory.Parent)
        {
            var candidate = Path.Combine(directory.FullName, "tests", "conformance", "servicebus");
            if (File.Exists(Path.Combine(candidate, "bench", "throughput.mjs")))
            {
                return candidate;
            }
        }
    }

    return null;
}

// Producers send `count` messages in batches while the consumers receive and complete until `deliveries`
// completions; the time from the first send to the last completion.
static async Task<TimeSpan> SendAndCompleteAsync(IReadOnlyList<ServiceBusSender> senders, IReadOnlyList<ServiceBusReceiver> consumers, int count, int deliveries)
{
    var completed = 0;
    var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
    using var stop = new CancellationTokenSource();
    var stopwatch = Stopwatch.StartNew();
    var produce = senders.Select((sender, p) => Task.Run(async () =>
    {
        for (var i = p * BatchSize; i < count; i += Producers * BatchSize)
        {
            var size = Math.Min(BatchSize, count - i);
            await sender.SendMessagesAsync(Enumerable.Range(i, size).Select(n => new ServiceBusMessage("{\"deliveryId\":\"" + n + "\",\"payload\":\"0123456789abcdef0123456789abcdef\"}")));
        }
    })).ToList();
    var consume = consumers.Select(consumer => Task.Run(async () =>
    {
        while (!stop.IsCancellationRequested)
        {
            IReadOnlyList<ServiceBusReceivedMessage> batch;
            try
            {
                batch = await consumer.ReceiveMessagesAsync(ReceiveBatch, TimeSpan.FromMilliseconds(200), stop.Token);
            }
            catch (OperationCanceledException)
            {
                return;
            }

            await Task.WhenAll(batch.Select(m => consumer.CompleteMessageAsync(m)));
            if (Interlocked.Add(ref completed, batch.Count) >= deliveries)
            {
                done.TrySetResult();
            }
        }
    })).ToList();
    await Task.WhenAll(produce);
    await done.Task.WaitAsync(TimeSpan.FromMinutes(5));
    var elapsed = stopwatch.Elapsed;
    await stop.CancelAsync();
    await Task.WhenAll(consume);
    return elapsed;
}

static string LoadAverage()
{
    try
    {
        var fields = File.ReadAllText("/proc/loadavg").Split(' ');
        return $"{fields[0]}, {fields[1]}, {fields[2]}";
    }
    catch (IOException)
    {
        return "unknown";
    }
    catch (UnauthorizedAccessException)
    {
        return "unknown";
    }
}

static string Invariant(FormattableString text) => text.ToString(CultureInfo.InvariantCulture);

async Task<double> TopicRunAsync(int count)
{
    var names = Enumerable.Range(1, Subscriptions).Select(i => $"s{i}").ToList();
    await using var emulator = await ServiceBusEmulator.StartAsync(new ServiceBusEmulatorOptions
    {
        HttpPort = null,
        Topics = [new TopicOptions { Name = "bench", Subscriptions = names.Select(n => new SubscriptionOptions { Name = n, LockDuration = TimeSpan.FromMinutes(5) }).ToList() }],
    });
    await using var client = new ServiceBusClient(emulator.ConnectionString);
    var senders = Enumerable.Range(0, Producers).Select(_ => client.CreateSender("bench")).ToList();
    var consumers = names.SelectMany(n => Enumerable.Range(0, ReceiversPerSubscription).Select(_ => client.CreateReceiver("bench", n, new ServiceBusReceiverOptions { PrefetchCount = Prefetch }))).ToList();
    foreach (var sender in senders)
    {
        await sender.SendMessageAsync(new ServiceBusMessage("warm"));
    }

    // The warm-up messages (one per sender, in every subscription) are taken out before the clock starts.
    var warm = 0;
    for (var s = 0; s < Subscriptions; s++)
    {
        var consumer = consumers[s * ReceiversPerSubscription];
        var taken = 0;
        while (taken < Producers)
        {
            foreach (var m in await consumer.ReceiveMessagesAsync(Producers - taken, TimeSpan.FromSeconds(5)))
            {
                await consumer.CompleteMessageAsync(m);
                taken++;
            }
        }

        warm = taken;
    }

    foreach (var consumer in consumers)
    {
        await consumer.PeekMessageAsync();
    }

    var deliveries = count * Subscriptions;
    var elapsed = await SendAndCompleteAsync(senders, consumers, count, deliveries);
    var snapshot = emulator.GetMetrics();
    foreach (var name in names)
    {
        var metrics = snapshot[SubscriptionOptions.PathOf("bench", name)];
        if (metrics.Counters.Completed != count + warm || metrics.ActiveMessages != 0)
        {
            throw new InvalidOperationException($"Topic run lost or duplicated messages in subscription {name}: completed {metrics.Counters.Completed}, active {metrics.ActiveMessages}.");
        }
    }

    return count / elapsed.TotalSeconds;
}

async Task<double> ChannelFanOutRunAsync(int count)
{
    // The topic baseline: each message is written to three channels, each read by its receivers.
    var queues = Enumerable.Range(0, Subscriptions).Select(_ => Channel.CreateUnbounded<ServiceBusMessage>()).ToList();
    var deliveries = count * Subscriptions;
    var completed = 0;
    var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
    var stopwatch = Stopwatch.StartNew();
    var produce = Enumerable.Range(0, Producers).Select(p => Task.Run(async () =>
    {
        for (var i = p * BatchSize; i < count; i += Producers * BatchSize)
        {
            var size = Math.Min(BatchSize, count - i);
            foreach (var message in Enumerable.Range(i, size).Select(n => new ServiceBusMessage("{\"deliveryId\":\"" + n + "\",\"payload\":\"0123456789abcdef0123456789abcdef\"}")))
            {
                foreach (var queue in queues)
                {
                    await queue.Writer.WriteAsync(message);
                }
            }
        }
    })).ToList();
    var consume = queues.SelectMany(queue => Enumerable.Range(0, ReceiversPerSubscription).Select(_ => Task.Run(async () =>
    {
        var batch = new List<ServiceBusMessage>(ReceiveBatch);
        while (await queue.Reader.WaitToReadAsync())
        {
            batch.Clear();
            while (batch.Count < ReceiveBatch && queue.Reader.TryRead(out var message))
            {
                batch.Add(message);
            }

            await Task.WhenAll(batch.Select(m => Task.Run(() => m.Body.ToMemory().Length)));
            if (Interlocked.Add(ref completed, batch.Count) >= deliveries)
            {
                done.TrySetResult();
            }
        }
    }))).ToList();
    await Task.WhenAll(produce);
    await done.Task;
    var elapsed = stopwatch.Elapsed;
    foreach (var queue in queues)
    {
        queue.Writer.Complete();
    }

    await Task.WhenAll(consume);
    return count / elapsed.TotalSeconds;
}

async Task<double> EmulatorRunAsync(int receivers, int count)
{
    await using var emulator = await ServiceBusEmulator.StartAsync(new ServiceBusEmulatorOptions
    {
        HttpPort = null,
        Queues = [new QueueOptions { Name = "bench", LockDuration = TimeSpan.FromMinutes(5) }],
    });
    await using var client = new ServiceBusClient(emulator.ConnectionString);
    var senders = Enumerable.Range(0, Producers).Select(_ => client.CreateSender("bench")).ToList();
    var consumers = Enumerable.Range(0, receivers).Select(_ => client.CreateReceiver("bench", new ServiceBusReceiverOptions { PrefetchCount = Prefetch })).ToList();
    foreach (var sender in senders)
    {
        await sender.SendMessageAsync(new ServiceBusMessage("warm"));
    }

    foreach (var consumer in consumers)
    {
        await consumer.PeekMessageAsync();
    }

    // The warm-up messages (one per sender) are taken out before the clock starts.
    var warm = 0;
    while (warm < Producers)
    {
        foreach (var m in await consumers[0].ReceiveMessagesAsync(Producers - warm, TimeSpan.FromSeconds(5)))
        {
            await consumers[0].CompleteMessageAsync(m);
            warm++;
        }
    }

    var elapsed = await SendAndCompleteAsync(senders, consumers, count, count);
    var metrics = emulator.GetMetrics()["bench"];
    if (metrics.Counters.Completed != count + warm || metrics.ActiveMessages != 0)
    {
        throw new InvalidOperationException($"Run lost or duplicated messages: completed {metrics.Counters.Completed}, active {metrics.ActiveMessages}.");
    }

    return count / elapsed.TotalSeconds;
}

async Task<double> ChannelRunAsync(int receivers, int count)
{
    var queue = Channel.CreateUnbounded<ServiceBusMessage>();
    var completed = 0;
    var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
    var stopwatch = Stopwatch.StartNew();
    var produce = Enumerable.Range(0, Producers).Select(p => Task.Run(async () =>
    {
        for (var i = p * BatchSize; i < count; i += Producers * BatchSize)
        {
            var size = Math.Min(BatchSize, count - i);
            foreach (var message in Enumerable.Range(i, size).Select(n => new ServiceBusMessage("{\"deliveryId\":\"" + n + "\",\"payload\":\"0123456789abcdef0123456789abcdef\"}")))
            {
                await queue.Writer.WriteAsync(message);
            }
        }
    })).ToList();
    var consume = Enumerable.Range(0, receivers).Select(_ => Task.Run(async () =>
    {
        var batch = new List<ServiceBusMessage>(ReceiveBatch);
        while (await queue.Reader.WaitToReadAsync())
        {
            batch.Clear();
            while (batch.Count < ReceiveBatch && queue.Reader.TryRead(out var message))
            {
                batch.Add(message);
            }

            await Task.WhenAll(batch.Select(m => Task.Run(() => m.Body.ToMemory().Length)));
            if (Interlocked.Add(ref completed, batch.Count) >= count)
            {
                done.TrySetResult();
            }
        }
    })).ToList();
    await Task.WhenAll(produce);
    await done.Task;
    var elapsed = stopwatch.Elapsed;
    queue.Writer.Complete();
    await Task.WhenAll(consume);
    return count / elapsed.TotalSeconds;
}

namespace DroneDelivery.Benchmarks.ServiceBus
{
    /// <summary>The benchmark's command line: <c>[--messages 20000] [--runs 3] [--js-seconds 10]</c>.</summary>
    internal static class BenchmarkCommand
    {
        public static readonly Option<int> Messages = BenchmarkOptions.Positive("--messages", 20_000, "Messages per run.");
        public static readonly Option<int> Runs = BenchmarkOptions.Positive("--runs", 3, "Runs per scenario; the best counts.");
        public static readonly Option<int> JsSeconds = BenchmarkOptions.Positive("--js-seconds", 10, "Seconds of the JavaScript SDK's run.");

        public static RootCommand Build() =>
            new("End-to-end throughput of the Service Bus emulator through the official SDKs, against an in-process channel.") { Messages, Runs, JsSeconds };
    }
}
