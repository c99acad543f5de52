using System.Text.Json;
using System.Text.Json.Serialization;
using Azure.Identity;
using DroneDelivery.ServiceDefaults.Http;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace DroneDelivery.ServiceClients.Cosmos;

public static class CosmosClients
{
    /// <summary>The named HttpClient the Cosmos SDK uses in Gateway mode.</summary>
    public const string HttpClientName = "cosmos";

    /// <summary>How documents are (de)serialized: camelCase, enums as names, nulls omitted.</summary>
    public static JsonSerializerOptions DocumentJson { get; } = CreateDocumentJson();

    /// <summary>
    /// Binds the <c>Cosmos</c> section and registers the process's one <see cref="CosmosClient"/>. Its
    /// HTTP calls go through <see cref="CosmosCallHandler"/> on a pooled client from IHttpClientFactory
    /// with at most <see cref="CosmosSettings.GatewayModeMaxConnectionLimit"/> connections and without
    /// the default resilience pipeline: the SDK retries by itself (429s as the service asks), and retrying
    /// twice would hide throttling.
    /// </summary>
    public static IHostApplicationBuilder AddCosmos(this IHostApplicationBuilder builder, string serviceName)
    {
        builder.AddSettings<CosmosSettings>("Cosmos");
        builder.Services.Configure<ResilienceSettings>(HttpClientName, settings => settings.Enabled = false);
        builder.Services.AddHttpClient(HttpClientName, client => client.Timeout = Timeout.InfiniteTimeSpan)
            .ConfigurePrimaryHttpMessageHandler((handler, services) =>
            {
                if (handler is SocketsHttpHandler sockets)
                {
                    sockets.MaxConnectionsPerServer = services.GetRequiredService<IOptions<CosmosSettings>>().Value.GatewayModeMaxConnectionLimit;
                }
            })
            .AddHttpMessageHandler(services => new CosmosCallHandler(services.GetRequiredService<IOptions<CosmosSettings>>().Value.DatabaseId));
        builder.Services.AddExceptionHandler<CosmosExceptionHandler>();
        builder.Services.AddSingleton(services => Create(
            services.GetRequiredService<IOptions<CosmosSettings>>().Value,
            services.GetRequiredService<IHttpClientFactory>(),
            serviceName));
        return builder;
    }

    /// <summary>A client configured from <paramref name="settings"/>: key auth with a connection string, else Entra ID.</summary>
    public static CosmosClient Create(CosmosSettings settings, IHttpClientFactory httpClients, string applicationName)
    {
        var options = new CosmosClientOptions
        {
            ApplicationName = applicationName,
            ConnectionMode = settings.ConnectionMode,
            LimitToEndpoint = settings.LimitToEndpoint,
            MaxRetryAttemptsOnRateLimitedRequests = settings.MaxRetryAttemptsOnRateLimitedRequests,
            MaxRetryWaitTimeOnRateLimitedRequests = settings.MaxRetryWaitTimeOnRateLimitedRequests,
            HttpClientFactory = () => httpClients.CreateClient(HttpClientName),
            UseSystemTextJsonSerializerWithOptions = DocumentJson,
        };
        return string.IsNullOrWhiteSpace(settings.ConnectionString)
            ? new CosmosClient(settings.AccountEndpoint!.AbsoluteUri, new DefaultAzureCredential(), options)
            : new CosmosClient(settings.ConnectionString, options);
    }

    private static JsonSerializerOptions CreateDocumentJson()
    {
        var options = new JsonSerializerOptions(JsonSerializerDefaults.Web)
        {
            DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull,
        };
        options.Converters.Add(new JsonStringEnumConverter());
        return options;
    }
}
