namespace DroneDelivery.TestSupport;

/// <summary>Polling for a condition that becomes true asynchronously, with a deadline instead of a sleep.</summary>
public static class Eventually
{
    public static async Task<bool> TrueAsync(Func<bool> condition, TimeSpan timeout, TimeSpan? interval = null)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (DateTime.UtcNow < deadline)
        {
            if (condition())
            {
                return true;
            }

            await Task.Delay(interval ?? TimeSpan.FromMilliseconds(50));
        }

        return condition();
    }

    public static async Task<bool> TrueAsync(Func<Task<bool>> condition, TimeSpan timeout, TimeSpan? interval = null)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (DateTime.UtcNow < deadline)
        {
            if (await condition())
            {
                return true;
            }

            await Task.Delay(interval ?? TimeSpan.FromMilliseconds(50));
        }

        return await condition();
    }
}
