using DroneDelivery.Services.Tests.Infrastructure;
using Microsoft.Extensions.Logging;

namespace DroneDelivery.Services.Tests;

/// <summary>A bad setting stops a service at start with a message naming the setting.</summary>
public sealed class SettingsTests
{
    [Theory]
    [InlineData("Redis:ConnectionString", null, "Setting 'Redis:ConnectionString'")]
    [InlineData("Redis:ConnectionString", "127.0.0.1:6379,nonsense=1", "Setting 'Redis:ConnectionString'")]
    [InlineData("Redis:DeliveryTtl", "-00:00:01", "Setting 'Redis:DeliveryTtl' = '-00:00:01' is invalid")]
    [InlineData("Redis:TrackingEventTtl", "400.00:00:00", "Setting 'Redis:TrackingEventTtl' = '400.00:00:00' is invalid")]
    [InlineData("Redis:DeliveryTTL2", "00:00:01", "DeliveryTTL2")]
    public Task Delivery_refuses_a_bad_setting(string key, string? value, string expected) =>
        AssertRefusedAsync(Definitions.Delivery, new() { ["Redis:ConnectionString"] = "127.0.0.1:6379", [key] = value }, expected);

    /// <summary>
    /// The service's real Program refuses to start: <c>ServiceHost.Run</c> catches the settings' validation
    /// failure and logs it as critical (the process then exits with code 2, as <see cref="ProgramTests"/> checks).
    /// </summary>
    internal static async Task AssertRefusedAsync(ServiceDefinition service, Dictionary<string, string?> settings, string expected)
    {
        var logs = new CapturedLogs();
        var factory = ServiceApp.CreateFactory(service, settings, logs);
        try
        {
            // Whether the factory then reports the start as failed is its business; the Program's refusal is ours.
            await Record.ExceptionAsync(() => Task.Run(factory.StartServer));
            // The Program logs its refusal on its own thread, after the host's failure reached the factory.
            var refusal = await logs.WaitForAsync(entry => entry.Level == LogLevel.Critical, TimeSpan.FromSeconds(30));
            Assert.Single(logs.Entries, entry => entry.Level == LogLevel.Critical);
            Assert.StartsWith("Invalid configuration; the service cannot start: ", refusal.Message);
            Assert.Contains(expected, refusal.Message);
            Assert.DoesNotContain(logs.Entries, entry => entry.Message.StartsWith("Now listening on", StringComparison.Ordinal));
        }
        finally
        {
            try
            {
                await factory.DisposeAsync();
            }
            catch (ArgumentNullException)
            {
                // Stopping a host whose start failed finds no hosted services to stop.
            }
        }
    }
}
