using Sdk = Azure.Messaging.ServiceBus;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>What the official-SDK tests share: receiving a known number of messages, and a running maximum.</summary>
internal static class SdkReceiving
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

    /// <summary>Receives exactly <paramref name="count"/> messages (each wait bounded), completing them when asked.</summary>
    public static async Task<List<Sdk.ServiceBusReceivedMessage>> ReceiveAsync(Sdk.ServiceBusReceiver receiver, int count, bool complete = false)
    {
        var received = new List<Sdk.ServiceBusReceivedMessage>();
        while (received.Count < count)
        {
            var batch = await receiver.ReceiveMessagesAsync(count - received.Count, Bound);
            Assert.NotEmpty(batch);
            foreach (var message in batch)
            {
                received.Add(message);
                if (complete)
                {
                    await receiver.CompleteMessageAsync(message);
                }
            }
        }

        return received;
    }

    /// <summary>Raises <paramref name="target"/> to <paramref name="value"/> when it is lower, atomically.</summary>
    public static void InterlockedMax(ref int target, int value)
    {
        int current;
        while ((current = Volatile.Read(ref target)) < value && Interlocked.CompareExchange(ref target, value, current) != current)
        {
        }
    }
}
