using DroneDelivery.Emulators.ServiceBus.Metrics;
using DroneDelivery.Lab.Measurement;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>The emulator's <c>GET /metrics</c>, read as Prometheus and the lab read it (the emulator needs its HTTP port).</summary>
internal static class PrometheusScrape
{
    private static readonly HttpClient Http = new();

    public static Task<string> TextAsync(ServiceBusEmulator emulator) =>
        Http.GetStringAsync(new Uri(emulator.HttpEndpoint ?? throw new InvalidOperationException("The emulator was started with HTTP off."), EmulatorMetricNames.PrometheusPath));

    public static async Task<IReadOnlyList<PrometheusSample>> SamplesAsync(ServiceBusEmulator emulator) => PrometheusText.Parse(await TextAsync(emulator));

    /// <summary>The one sample of <paramref name="name"/> for <paramref name="queue"/>.</summary>
    public static double Of(this IReadOnlyList<PrometheusSample> samples, string name, string queue) =>
        samples.Single(s => s.Name == name && s.Label(EmulatorMetricNames.QueueLabel) == queue).Value;
}
