using System.Diagnostics;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// A process made to leak, for the soak's tests only: it keeps every block of memory it allocates, a
/// steady number of megabytes a second on its own clock (0: it holds nothing and only waits), and
/// writes to every page so that each block counts in its working set. It stops growing at 1 GB and
/// ends with the test that started it (<see cref="LocalSystem.LocalProcess"/>).
/// </summary>
public static class LeakingProcess
{
    public const string Command = "leak";

    public const string ReadyLine = "leaking";

    private const int Block = 1024 * 1024;
    private const int Page = 4096;
    private const int MaxBlocks = 1024;

    public static int Run(double megabytesPerSecond)
    {
        var held = new List<byte[]>();
        var clock = Stopwatch.StartNew();
        Console.WriteLine(ReadyLine);
        while (true)
        {
            var due = Math.Min(MaxBlocks, (long)(megabytesPerSecond * clock.Elapsed.TotalSeconds));
            while (held.Count < due)
            {
                var block = new byte[Block];
                for (var i = 0; i < block.Length; i += Page)
                {
                    block[i] = 1;
                }

                held.Add(block);
            }

            Thread.Sleep(50);
        }
    }
}
