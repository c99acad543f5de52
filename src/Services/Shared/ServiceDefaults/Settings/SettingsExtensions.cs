using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace DroneDelivery.ServiceDefaults.Settings;

/// <summary>Marks a settings property whose value must never be written to logs.</summary>
[AttributeUsage(AttributeTargets.Property)]
public sealed class SecretAttribute : Attribute;

/// <summary>A settings class bound to a configuration section; used to report effective values at start.</summary>
public sealed record SettingsRegistration(Type SettingsType, string SectionPath);

public static class SettingsExtensions
{
    /// <summary>
    /// Binds <typeparamref name="T"/> to <paramref name="sectionPath"/> and makes a bad value stop the
    /// service at start with a message naming the setting: unknown keys (a misspelled environment
    /// variable) and unconvertible values fail binding, data-annotation rules fail validation, and
    /// every effective value is logged once the host starts.
    /// </summary>
    public static OptionsBuilder<T> AddSettings<T>(this IHostApplicationBuilder builder, string sectionPath)
        where T : class
    {
        builder.Services.AddSingleton(new SettingsRegistration(typeof(T), sectionPath));
        builder.Services.TryAddEnumerable(ServiceDescriptor.Singleton<IHostedService, EffectiveSettingsReporter>());
        builder.Services.AddSingleton<IValidateOptions<T>>(new SettingsValidator<T>(sectionPath));

        // Bound for every options name, so a named instance (e.g. one HTTP client's resilience
        // settings) starts from the section and a service's own Configure(name, ...) refines it.
        var configuration = builder.Configuration;
        builder.Services.ConfigureAll<T>(settings => Bind(settings, configuration, sectionPath));
        return builder.Services.AddOptions<T>().ValidateOnStart();
    }

    private static void Bind<T>(T settings, IConfiguration configuration, string sectionPath)
        where T : class
    {
        try
        {
            configuration.GetSection(sectionPath).Bind(settings, binder => binder.ErrorOnUnknownConfiguration = true);
        }
        catch (InvalidOperationException e)
        {
            // The binder's own message names the property but not where it came from.
            throw new OptionsValidationException(
                sectionPath,
                typeof(T),
                [$"Configuration section '{sectionPath}' cannot be bound to {typeof(T).Name}: {e.Message}"]);
        }
    }
}
