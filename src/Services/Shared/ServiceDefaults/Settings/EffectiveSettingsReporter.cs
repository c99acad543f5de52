using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace DroneDelivery.ServiceDefaults.Settings;

/// <summary>
/// Logs the effective value of every registered setting once the host starts, so the value a
/// service actually runs with is never a guess (a tuning knob silently left at its default is the
/// classic way a tuning step does nothing).
/// </summary>
internal sealed partial class EffectiveSettingsReporter(
    IEnumerable<SettingsRegistration> registrations,
    IServiceProvider services,
    ILogger<EffectiveSettingsReporter> logger) : IHostedService
{
    public Task StartAsync(CancellationToken cancellationToken)
    {
        foreach (var registration in registrations.DistinctBy(r => (r.SettingsType, r.SectionPath)))
        {
            var optionsType = typeof(IOptions<>).MakeGenericType(registration.SettingsType);
            var options = (IOptions<object>)services.GetRequiredService(optionsType);
            foreach (var (key, value) in SettingValues.Flatten(options.Value, registration.SectionPath))
            {
                LogSetting(logger, key, value ?? "(null)");
            }
        }

        return Task.CompletedTask;
    }

    public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    [LoggerMessage(EventId = 1000, Level = LogLevel.Information, Message = "Setting {SettingKey} = {SettingValue}")]
    private static partial void LogSetting(ILogger logger, string settingKey, string settingValue);
}
