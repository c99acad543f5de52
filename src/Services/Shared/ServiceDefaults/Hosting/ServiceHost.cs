using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace DroneDelivery.ServiceDefaults.Hosting;

public static class ServiceHost
{
    /// <summary>Exit code of a service that refused to start because of a bad setting.</summary>
    public const int InvalidConfigurationExitCode = 2;

    /// <summary>
    /// Runs the service until it is stopped. A bad setting stops it at start with exit code 2 and
    /// one message per offending setting (e.g. a Helm value out of range), instead of a stack trace.
    /// </summary>
    public static int Run(WebApplication app)
    {
        // Taken before running: a failed start disposes the service provider.
        var logger = app.Logger;
        var name = app.Environment.ApplicationName;
        try
        {
            app.Run();
            return 0;
        }
        catch (OptionsValidationException e)
        {
            logger.LogCritical("Invalid configuration; the service cannot start: {Failures}", string.Join(" | ", e.Failures));
            Console.Error.WriteLine($"{name}: invalid configuration; the service cannot start:");
            foreach (var failure in e.Failures)
            {
                Console.Error.WriteLine($"  - {failure}");
            }

            return InvalidConfigurationExitCode;
        }
    }
}
