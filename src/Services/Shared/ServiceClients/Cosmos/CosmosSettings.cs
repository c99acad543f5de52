using System.ComponentModel.DataAnnotations;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.ServiceClients.Cosmos;

/// <summary>The Cosmos DB account and client tuning of Package and DroneScheduler (section <c>Cosmos</c>).</summary>
public sealed class CosmosSettings : IValidatableObject
{
    /// <summary>
    /// <c>AccountEndpoint=...;AccountKey=...;</c> (the key is masked in logs). Locally the emulator's;
    /// on Azure leave it unset and set <see cref="AccountEndpoint"/> to use Entra ID (workload identity).
    /// Exactly one of the two is required.
    /// </summary>
    public string? ConnectionString { get; set; }

    /// <summary>The account's https endpoint, used with Entra ID (DefaultAzureCredential) when <see cref="ConnectionString"/> is unset.</summary>
    public Uri? AccountEndpoint { get; set; }

    /// <summary>Database id. Default <c>dronedelivery</c>.</summary>
    [Required]
    [RegularExpression(CosmosNames.IdPattern, ErrorMessage = CosmosNames.IdRule)]
    public string DatabaseId { get; set; } = "dronedelivery";

    /// <summary>
    /// <c>Gateway</c> (HTTPS through the account's gateway; the only mode the local emulator speaks) or
    /// <c>Direct</c> (TCP to the replicas; Azure only). Default <c>Gateway</c>. Step A4 of the case study
    /// ran in Direct mode.
    /// </summary>
    public ConnectionMode ConnectionMode { get; set; } = ConnectionMode.Gateway;

    /// <summary>
    /// Whether the client talks only to the configured endpoint instead of the regions the account lists.
    /// Default true: required by the emulator, harmless for a single-region account.
    /// </summary>
    public bool LimitToEndpoint { get; set; } = true;

    /// <summary>
    /// How many times the client retries a throttled (429) request itself, waiting what the service says
    /// (count, 0–100). Default 9, the SDK's. With 0 a 429 surfaces at once.
    /// </summary>
    [Range(0, 100)]
    public int MaxRetryAttemptsOnRateLimitedRequests { get; set; } = 9;

    /// <summary>Longest cumulative wait for throttled retries of one request. Default 00:00:30, the SDK's. Range 0 – 10 min.</summary>
    [Range(typeof(TimeSpan), "00:00:00", "00:10:00")]
    public TimeSpan MaxRetryWaitTimeOnRateLimitedRequests { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>Most concurrent HTTP connections to the gateway (Gateway mode; count, 1–65535). Default 50, the SDK's.</summary>
    [Range(1, 65535)]
    public int GatewayModeMaxConnectionLimit { get; set; } = 50;

    public IEnumerable<ValidationResult> Validate(ValidationContext validationContext)
    {
        var hasConnectionString = !string.IsNullOrWhiteSpace(ConnectionString);
        if (hasConnectionString == (AccountEndpoint is not null))
        {
            yield return new ValidationResult(
                "Exactly one of ConnectionString (account key) and AccountEndpoint (Entra ID) must be set.",
                [nameof(ConnectionString), nameof(AccountEndpoint)]);
        }

        if (hasConnectionString && (!ConnectionString!.Contains("AccountEndpoint=", StringComparison.OrdinalIgnoreCase) || !ConnectionString.Contains("AccountKey=", StringComparison.OrdinalIgnoreCase)))
        {
            yield return new ValidationResult("ConnectionString must contain AccountEndpoint= and AccountKey=.", [nameof(ConnectionString)]);
        }

        if (AccountEndpoint is { } endpoint && (!endpoint.IsAbsoluteUri || (endpoint.Scheme != Uri.UriSchemeHttps && endpoint.Scheme != Uri.UriSchemeHttp)))
        {
            yield return new ValidationResult("AccountEndpoint must be an absolute https address.", [nameof(AccountEndpoint)]);
        }

        if (!Enum.IsDefined(ConnectionMode))
        {
            yield return new ValidationResult("ConnectionMode must be Gateway or Direct.", [nameof(ConnectionMode)]);
        }
    }
}

/// <summary>Rules for database and container ids.</summary>
public static class CosmosNames
{
    public const string IdPattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$";

    public const string IdRule = "must be 1-255 characters of letters, digits, '.', '_' or '-', starting with a letter or digit.";
}
