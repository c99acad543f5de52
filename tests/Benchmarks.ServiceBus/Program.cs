using System.Diagnostics;
using System.Globalization;
using System.Threading.Channels;
using DroneDelivery.Emulators.ServiceBus;
using DroneDelivery.ServiceBus;

// End to end: producers send messages in batches, R receivers receive and complete them; the clock runs from the
// first send to the last completion. The baseline runs the same pattern over an in-process channel (send = write,
// receive = read, complete = acknowledge), so the ratio says what the AMQP round trips and the broker cost.
//
//   dotnet run -c Release --project tests/Benchmarks.ServiceBus -- [--messages 20000] [--runs 3]
var messages = Option("--messages", 20_000);
var runs = Option("--runs", 3);
const int Producers = 4;
const int BatchSize = 100;
const int ReceiveBatch = 50;
const int Prefetch = 200;

Console.WriteLine($"Service Bus emulator benchmark: {messages} messages per run, {Producers} producers (batches of {BatchSize}), best of {runs} runs, {Environment.ProcessorCount} cores");
Console.WriteLine();
Console.WriteLine("| receivers | channel baseline (msg/s) | emulator via client (msg/s) | emulator / baseline | CPU per message, client + broker (µs) |");
Console.WriteLine("|---:|---:|---:|---:|---:|");
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

    Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"| {receivers} | {baseline:N0} | {emulator:N0} | {emulator / baseline:0.0000} | {cpu:N0} |"));
}

return 0;

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
            if (Interlocked.Add(ref completed, batch.Count) >= count)
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

int Option(string name, int fallback)
{
    var index = Array.IndexOf(args, name);
    return index >= 0 && index + 1 < args.Length && int.TryParse(args[index + 1], CultureInfo.InvariantCulture, out var value) ? value : fallback;
}
