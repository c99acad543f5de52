using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Xunit;

namespace DroneDelivery.ServiceDefaults.Tests;

public sealed class LoggingDefaultsTests
{
    [Fact]
    public async Task Per_request_framework_logs_start_at_warning_and_the_services_own_at_information()
    {
        await using var service = await TestService.StartAsync();
        var loggers = service.App.Services.GetRequiredService<ILoggerFactory>();

        Assert.False(loggers.CreateLogger("Microsoft.AspNetCore.Hosting.Diagnostics").IsEnabled(LogLevel.Information));
        Assert.False(loggers.CreateLogger("System.Net.Http.HttpClient.package.LogicalHandler").IsEnabled(LogLevel.Information));
        Assert.True(loggers.CreateLogger("System.Net.Http.HttpClient.package.LogicalHandler").IsEnabled(LogLevel.Warning));
        Assert.True(loggers.CreateLogger("DroneDelivery.Workflow.DeliveryProcessor").IsEnabled(LogLevel.Information));
    }

    [Fact]
    public async Task Logging_settings_override_the_default_levels()
    {
        await using var service = await TestService.StartAsync(new()
        {
            ["Logging:LogLevel:Microsoft.AspNetCore"] = "Information",
            ["Logging:LogLevel:System.Net.Http.HttpClient"] = "Debug",
        });
        var loggers = service.App.Services.GetRequiredService<ILoggerFactory>();

        Assert.True(loggers.CreateLogger("Microsoft.AspNetCore.Hosting.Diagnostics").IsEnabled(LogLevel.Information));
        Assert.True(loggers.CreateLogger("System.Net.Http.HttpClient.package.ClientHandler").IsEnabled(LogLevel.Debug));
    }
}
