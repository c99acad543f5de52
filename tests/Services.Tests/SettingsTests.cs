using DroneDelivery.Services.Tests.Infrastructure;
using Microsoft.Extensions.Options;

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

    internal static async Task AssertRefusedAsync(ServiceDefinition service, Dictionary<string, string?> settings, string expected)
    {
        var app = ServiceApp.Build(service, settings);
        try
        {
            var error = await Assert.ThrowsAsync<OptionsValidationException>(() => app.StartAsync());
            Assert.Contains(expected, error.Message);
        }
        finally
        {
            await app.DisposeAsync();
        }
    }
}
