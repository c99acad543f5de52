using System.Net.Http.Json;
using DroneDelivery.Emulators.ServiceBus.Broker;

namespace DroneDelivery.Emulators.ServiceBus.Faults;

/// <summary>
/// Switches an emulator's faults on and off and sets its latency over its HTTP listener (<c>/_emulator/faults</c>,
/// <c>/_emulator/latency</c>), signing each change with the namespace's key as the endpoints require.
/// </summary>
public sealed class ServiceBusFaultClient(HttpClient http, string keyName, string key)
{
    public async Task<ServiceBusFaultState> GetAsync(CancellationToken cancellationToken = default) =>
        await http.GetFromJsonAsync<ServiceBusFaultState>(FaultAdminEndpoints.Path, FaultAdminEndpoints.Json, cancellationToken).ConfigureAwait(false)
        ?? throw new InvalidDataException("The emulator answered no fault state.");

    /// <summary>Replaces the rules (and the seed they draw from).</summary>
    public Task<ServiceBusFaultState> SetAsync(ServiceBusFaultOptions faults, CancellationToken cancellationToken = default) =>
        SendAsync(HttpMethod.Put, FaultAdminEndpoints.Path, JsonContent.Create(faults, options: FaultAdminEndpoints.Json), cancellationToken);

    /// <summary>Removes every rule and ends a pause.</summary>
    public Task<ServiceBusFaultState> ClearAsync(CancellationToken cancellationToken = default) =>
        SendAsync(HttpMethod.Delete, FaultAdminEndpoints.Path, null, cancellationToken);

    /// <summary>Stops the whole namespace answering for <paramref name="duration"/>, connections kept.</summary>
    public Task<ServiceBusFaultState> PauseAsync(TimeSpan duration, CancellationToken cancellationToken = default) =>
        SendAsync(HttpMethod.Post, FaultAdminEndpoints.Path + "/pause", JsonContent.Create(new NamespacePause(duration.TotalSeconds), options: FaultAdminEndpoints.Json), cancellationToken);

    /// <summary>Ends a pause early.</summary>
    public Task<ServiceBusFaultState> ResumeAsync(CancellationToken cancellationToken = default) =>
        SendAsync(HttpMethod.Delete, FaultAdminEndpoints.Path + "/pause", null, cancellationToken);

    /// <summary>Replaces the round trips the emulator adds to sends, receives and settlements.</summary>
    public Task<ServiceBusLatencyState> SetLatencyAsync(ServiceBusLatencyState latency, CancellationToken cancellationToken = default) =>
        SendAsync<ServiceBusLatencyState>(HttpMethod.Put, LatencyAdminEndpoint.Path, JsonContent.Create(latency, options: FaultAdminEndpoints.Json), cancellationToken);

    private Task<ServiceBusFaultState> SendAsync(HttpMethod method, string path, HttpContent? content, CancellationToken cancellationToken) =>
        SendAsync<ServiceBusFaultState>(method, path, content, cancellationToken);

    private async Task<T> SendAsync<T>(HttpMethod method, string path, HttpContent? content, CancellationToken cancellationToken)
    {
        using var request = new HttpRequestMessage(method, path) { Content = content };
        var token = SharedAccessSignature.Create(http.BaseAddress?.ToString() ?? "emulator", keyName, key, TimeSpan.FromMinutes(10)).ToString();
        request.Headers.TryAddWithoutValidation("Authorization", token);
        using var response = await http.SendAsync(request, cancellationToken).ConfigureAwait(false);
        if (!response.IsSuccessStatusCode)
        {
            throw new HttpRequestException(
                $"{method} {path} answered {(int)response.StatusCode}: {await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false)}",
                null,
                response.StatusCode);
        }

        return await response.Content.ReadFromJsonAsync<T>(FaultAdminEndpoints.Json, cancellationToken).ConfigureAwait(false)
            ?? throw new InvalidDataException($"The emulator answered {path} with nothing.");
    }
}
