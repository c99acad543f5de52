using DroneDelivery.Contracts.Backends;

namespace DroneDelivery.Gateway;

public static class GatewayServices
{
    /// <summary>The three backends' clients (section <c>Backends</c>) and the invoice aggregator.</summary>
    public static WebApplicationBuilder AddGatewayServices(this WebApplicationBuilder builder)
    {
        builder.AddBackendClients();
        builder.Services.AddSingleton<InvoiceAggregator>();
        return builder;
    }
}
