using System.ComponentModel.DataAnnotations;
using DroneDelivery.ServiceDefaults.Hosting;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.Extensions.Options;

namespace DroneDelivery.ServiceDefaults.Tests;

public sealed class SampleSettings
{
    [Range(1, 100)]
    public int MaxConcurrentCalls { get; set; } = 1;

    public SampleLockSettings Lock { get; set; } = new();

    [Secret]
    public string? ApiKey { get; set; }

    public string? ConnectionString { get; set; }
}

public sealed class SampleLockSettings
{
    [Range(typeof(TimeSpan), "00:00:01", "00:05:00")]
    public TimeSpan Duration { get; set; } = TimeSpan.FromSeconds(30);
}

public class SettingsTests
{
    [Fact]
    public async Task A_value_out_of_range_stops_the_start_naming_the_full_key()
    {
        var app = Build(new() { ["Sample:MaxConcurrentCalls"] = "0" });

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => app.StartAsync());

        Assert.Contains("Setting 'Sample:MaxConcurrentCalls' = '0' is invalid", error.Message);
    }

    [Fact]
    public async Task A_nested_value_is_reported_with_its_nested_key()
    {
        var app = Build(new() { ["Sample:Lock:Duration"] = "00:10:00" });

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => app.StartAsync());

        Assert.Contains("Setting 'Sample:Lock:Duration' = '00:10:00' is invalid", error.Message);
    }

    [Fact]
    public async Task A_misspelled_key_stops_the_start_instead_of_being_ignored()
    {
        var app = Build(new() { ["Sample:MaxConcurentCalls"] = "20" });

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => app.StartAsync());

        Assert.Contains("'Sample'", error.Message);
        Assert.Contains("MaxConcurentCalls", error.Message);
    }

    [Fact]
    public async Task A_value_of_the_wrong_type_stops_the_start_naming_the_key()
    {
        var app = Build(new() { ["Sample:MaxConcurrentCalls"] = "many" });

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => app.StartAsync());

        Assert.Contains("Sample:MaxConcurrentCalls", error.Message);
    }

    [Fact]
    public async Task Effective_values_are_logged_at_start_with_secrets_masked()
    {
        await using var service = await TestService.StartAsync(
            new()
            {
                ["Sample:MaxConcurrentCalls"] = "20",
                ["Sample:ApiKey"] = "top-secret-api-key",
                ["Sample:ConnectionString"] = "AccountEndpoint=http://127.0.0.1:8081/;AccountKey=c2VjcmV0a2V5;",
            },
            builder => builder.AddSettings<SampleSettings>("Sample"));

        var messages = service.Logs.Messages;
        Assert.Contains("Setting Sample:MaxConcurrentCalls = 20", messages);
        Assert.Contains("Setting Sample:Lock:Duration = 00:00:30", messages);
        Assert.Contains("Setting Sample:ApiKey = ***", messages);
        Assert.Contains("Setting Sample:ConnectionString = AccountEndpoint=http://127.0.0.1:8081/;AccountKey=***;", messages);
        Assert.DoesNotContain(messages, m => m.Contains("top-secret-api-key") || m.Contains("c2VjcmV0a2V5"));
        // The service defaults' own knobs are reported the same way.
        Assert.Contains("Setting Resilience:MaxRetryAttempts = 3", messages);
    }

    [Fact]
    public void A_service_with_a_bad_setting_exits_with_the_configuration_error_code()
    {
        var app = Build(new() { ["Sample:MaxConcurrentCalls"] = "1000" });

        var exitCode = ServiceHost.Run(app);

        Assert.Equal(ServiceHost.InvalidConfigurationExitCode, exitCode);
    }

    private static Microsoft.AspNetCore.Builder.WebApplication Build(Dictionary<string, string?> settings) =>
        TestService.Build(settings, builder => builder.AddSettings<SampleSettings>("Sample"));
}
