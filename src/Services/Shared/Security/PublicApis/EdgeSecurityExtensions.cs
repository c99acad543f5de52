using System.Globalization;
using System.Security.Claims;
using System.Threading.RateLimiting;
using DroneDelivery.Security.Tokens;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Authentication.JwtBearer;
using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Cors.Infrastructure;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.RateLimiting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Microsoft.Identity.Web;
using Microsoft.IdentityModel.Tokens;

namespace DroneDelivery.Security.PublicApis;

/// <summary>
/// The public edge's protection, for the services clients call from outside (Gateway, Ingestion): JWT
/// bearer authentication, the scope/role policies, a per-caller rate limit and CORS.
/// </summary>
public static partial class EdgeSecurityExtensions
{
    /// <summary>The rate-limiting policy every public operation carries.</summary>
    public const string RateLimitPolicy = "per-caller";

    /// <summary>The OpenAPI security scheme of the bearer token.</summary>
    public const string SecuritySchemeName = "Bearer";

    /// <summary>
    /// Settings (<c>Authentication</c>, <c>RateLimiting</c>, <c>Cors</c>), the JWT bearer scheme (plain
    /// JwtBearer for DevelopmentIssuer and OpenIdConnect, Microsoft.Identity.Web for EntraId), the
    /// authorization policies (every endpoint needs an authenticated caller unless it allows anonymous
    /// callers), the rate limiter and CORS. Time (token lifetime, rate windows) is the registered
    /// <see cref="TimeProvider"/> (the system's unless one is registered already).
    /// </summary>
    public static WebApplicationBuilder AddEdgeSecurity(this WebApplicationBuilder builder)
    {
        builder.AddSettings<AuthenticationSettings>("Authentication")
            .Validate<IHostEnvironment>(
                (settings, environment) => settings.Mode != EdgeAuthenticationMode.None || environment.IsDevelopment(),
                "Setting 'Authentication:Mode' = 'None' is invalid: None (no token validation) is allowed only in the Development environment.");
        builder.AddSettings<RateLimitingSettings>("RateLimiting");
        builder.AddSettings<CorsSettings>("Cors");
        builder.Services.TryAddSingleton(TimeProvider.System);
        builder.Services.AddSingleton<EdgeAccess>();
        builder.Services.AddHostedService<AuthenticationOffWarning>();

        AddAuthentication(builder);
        AddAuthorization(builder.Services);
        AddRateLimiting(builder.Services);
        builder.Services.AddCors();
        builder.Services.AddOptions<CorsOptions>().Configure<IOptions<CorsSettings>>((cors, settings) =>
        {
            if (settings.Value.AllowedOrigins.Count > 0)
            {
                cors.AddDefaultPolicy(policy => policy
                    .WithOrigins([.. settings.Value.AllowedOrigins.Select(origin => origin.TrimEnd('/'))])
                    .WithMethods(HttpMethods.Get, HttpMethods.Post, HttpMethods.Patch, HttpMethods.Delete)
                    .WithHeaders("Authorization", "Content-Type")
                    .WithExposedHeaders("Location", "Retry-After"));
            }
        });
        builder.Services.AddBearerApiDocument();
        return builder;
    }

    /// <summary>
    /// CORS, then authentication, then the rate limit (partitioned by the authenticated subject), then
    /// authorization. Call after <c>MapDefaultEndpoints</c> (whose error handling then renders the 401,
    /// 403 and 429 answers as problem details) and before the first request.
    /// </summary>
    public static WebApplication UseEdgeSecurity(this WebApplication app)
    {
        app.UseCors();
        app.UseAuthentication();
        app.UseRateLimiter();
        app.UseAuthorization();
        return app;
    }

    /// <summary>
    /// The operation needs <paramref name="permission"/> (its scope or its role) and is rate limited per
    /// caller; documented with the bearer scheme and its 401, 403 and 429 answers.
    /// </summary>
    public static TBuilder RequirePermission<TBuilder>(this TBuilder builder, Permission permission)
        where TBuilder : IEndpointConventionBuilder =>
        builder
            .RequireAuthorization(permission.PolicyName)
            .RequireRateLimiting(RateLimitPolicy)
            .WithMetadata(permission)
            .ProducesProblem(StatusCodes.Status401Unauthorized)
            .ProducesProblem(StatusCodes.Status403Forbidden)
            .ProducesProblem(StatusCodes.Status429TooManyRequests);

    /// <summary>
    /// 403 unless the caller may use <paramref name="permission"/> for the owner <paramref name="owner"/>
    /// finds in the request (a route value, the body). When it finds none (absent or invalid) the handler
    /// runs and answers its own 400.
    /// </summary>
    public static TBuilder RequireOwner<TBuilder>(this TBuilder builder, Permission permission, Func<EndpointFilterInvocationContext, string?> owner)
        where TBuilder : IEndpointConventionBuilder =>
        builder.AddEndpointFilter(async (context, next) =>
        {
            var access = context.HttpContext.RequestServices.GetRequiredService<EdgeAccess>();
            if (owner(context) is { } ownerId && !access.MayActFor(context.HttpContext.User, permission, ownerId))
            {
                return Forbidden(permission, ownerId);
            }

            return await next(context);
        });

    /// <summary>403 problem details: the caller may not use <paramref name="permission"/> for this owner.</summary>
    public static IResult Forbidden(Permission permission, string ownerId) =>
        TypedResults.Problem(
            statusCode: StatusCodes.Status403Forbidden,
            title: "Not allowed for this owner",
            detail: $"The caller may not {permission.Action} of owner '{ownerId}': that needs the '{ApiAccess.OwnerClaim}' claim to be this owner and the scope '{permission.Scope}', or the role '{permission.Role}'.");

    /// <summary>
    /// Both schemes are registered and the mode picks the default when options are built — the mode is
    /// configuration, which a host may still add to after the services are registered: plain JwtBearer
    /// (<c>Bearer</c>) for DevelopmentIssuer and OpenIdConnect, Microsoft.Identity.Web's (<c>EntraId</c>)
    /// for EntraId. None has no default scheme: nothing is authenticated.
    /// </summary>
    private static void AddAuthentication(WebApplicationBuilder builder)
    {
        var services = builder.Services;
        foreach (var scheme in new[] { JwtBearerDefaults.AuthenticationScheme, EntraIdScheme })
        {
            // Registered before the schemes, so these run first: Microsoft.Identity.Web then fills in only
            // what they leave unset (the authority, its issuer validator, its claims check).
            services.AddOptions<JwtBearerOptions>(scheme)
                .Configure<IOptions<AuthenticationSettings>, TimeProvider>((jwt, settings, time) => ConfigureJwtBearer(jwt, settings.Value, time));
        }

        services.AddOptions<AuthenticationOptions>().Configure<IOptions<AuthenticationSettings>>((options, settings) =>
            options.DefaultScheme = settings.Value.Mode switch
            {
                EdgeAuthenticationMode.EntraId => EntraIdScheme,
                EdgeAuthenticationMode.DevelopmentIssuer or EdgeAuthenticationMode.OpenIdConnect => JwtBearerDefaults.AuthenticationScheme,
                _ => null,
            });
        services.AddOptions<MicrosoftIdentityOptions>(EntraIdScheme).Configure<IOptions<AuthenticationSettings>>((identity, settings) =>
        {
            if (settings.Value.Authority is { } authority && AuthenticationSettings.EntraTenant(authority) is { } tenant)
            {
                identity.Instance = tenant.Instance;
                identity.TenantId = tenant.Tenant;
            }

            identity.ClientId = settings.Value.ClientId;
        });

        services.AddAuthentication()
            .AddJwtBearer()
            .AddMicrosoftIdentityWebApi(_ => { }, _ => { }, EntraIdScheme);
    }

    /// <summary>The scheme of Microsoft.Identity.Web's JwtBearer handler (Mode EntraId).</summary>
    internal const string EntraIdScheme = "EntraId";

    /// <summary>Every check on: signature (no unsigned or <c>alg: none</c> token), issuer, audience, lifetime.</summary>
    internal static void ConfigureJwtBearer(JwtBearerOptions jwt, AuthenticationSettings settings, TimeProvider time)
    {
        // Claims keep the token's names (sub, scp, roles, owner) instead of .NET's long URIs.
        jwt.MapInboundClaims = false;
        jwt.IncludeErrorDetails = true;
        jwt.Events ??= new JwtBearerEvents();
        jwt.Events.OnChallenge = context =>
        {
            // The description can quote the token (an issuer, an audience): a control character there
            // would make the WWW-Authenticate header invalid and the 401 a 500.
            context.ErrorDescription = HeaderSafe(context.ErrorDescription);
            return Task.CompletedTask;
        };
        jwt.TimeProvider = time;
        var parameters = jwt.TokenValidationParameters;
        parameters.ValidateIssuer = true;
        parameters.ValidateAudience = true;
        parameters.ValidAudiences = settings.Audience is { } audience ? [audience] : [];
        parameters.ValidateLifetime = true;
        parameters.RequireExpirationTime = true;
        parameters.ClockSkew = settings.ClockSkew;
        parameters.LifetimeValidator = TokenLifetime.On(time);
        parameters.RequireSignedTokens = true;
        parameters.ValidateIssuerSigningKey = true;
        parameters.NameClaimType = ApiAccess.SubjectClaim;
        parameters.RoleClaimType = ApiAccess.RolesClaim;

        switch (settings.Mode)
        {
            case EdgeAuthenticationMode.DevelopmentIssuer:
                parameters.ValidIssuer = settings.Issuer;
                parameters.IssuerSigningKeys = [.. settings.SigningKeys.Select(AuthenticationSettings.DecodeKey).OfType<byte[]>().Select(key => new SymmetricSecurityKey(key))];
                parameters.ValidAlgorithms = [SecurityAlgorithms.HmacSha256];
                break;
            case EdgeAuthenticationMode.OpenIdConnect:
                jwt.Authority = settings.Authority?.AbsoluteUri;
                jwt.RequireHttpsMetadata = settings.Authority is not { } authority || !AuthenticationSettings.IsLoopback(authority);
                parameters.ValidIssuer = settings.Issuer;
                parameters.ValidAlgorithms = AsymmetricAlgorithms;
                break;
            case EdgeAuthenticationMode.EntraId:
                // Authority and issuer validation: Microsoft.Identity.Web, from the tenant.
                parameters.ValidAlgorithms = AsymmetricAlgorithms;
                break;
        }
    }

    /// <summary>Printable ASCII only, without quotes or backslashes: safe inside a quoted header parameter.</summary>
    internal static string? HeaderSafe(string? text) =>
        text is null ? null : string.Create(text.Length, text, (span, source) =>
        {
            for (var i = 0; i < source.Length; i++)
            {
                var c = source[i];
                span[i] = c is >= ' ' and <= '~' and not '"' and not '\\' ? c : '?';
            }
        });

    /// <summary>What an OpenID Connect issuer signs with; never a shared secret, never <c>none</c>.</summary>
    private static readonly string[] AsymmetricAlgorithms =
    [
        SecurityAlgorithms.RsaSha256, SecurityAlgorithms.RsaSha384, SecurityAlgorithms.RsaSha512,
        SecurityAlgorithms.RsaSsaPssSha256, SecurityAlgorithms.RsaSsaPssSha384, SecurityAlgorithms.RsaSsaPssSha512,
        SecurityAlgorithms.EcdsaSha256, SecurityAlgorithms.EcdsaSha384, SecurityAlgorithms.EcdsaSha512,
    ];

    private static void AddAuthorization(IServiceCollection services)
    {
        var authorization = services.AddAuthorizationBuilder()
            // Secure by default: an endpoint that says nothing needs a valid token; health, metrics and
            // the API document allow anonymous callers explicitly.
            .SetFallbackPolicy(new AuthorizationPolicyBuilder().AddRequirements(new PermissionRequirement(null)).Build());
        foreach (var permission in Permission.All)
        {
            authorization.AddPolicy(permission.PolicyName, policy => policy.AddRequirements(new PermissionRequirement(permission)));
        }

        services.AddSingleton<IAuthorizationHandler, PermissionHandler>();
    }

    private static void AddRateLimiting(IServiceCollection services)
    {
        services.AddRateLimiter(_ => { });
        services.AddOptions<RateLimiterOptions>().Configure<IOptions<RateLimitingSettings>, TimeProvider>((options, settings, time) =>
        {
            var (limit, window) = (settings.Value.PermitLimit, settings.Value.Window);
            options.RejectionStatusCode = StatusCodes.Status429TooManyRequests;
            options.AddPolicy(RateLimitPolicy, context => RateLimitPartition.Get(CallerKey(context), _ => new FixedWindowLimiter(time, limit, window)));
            options.OnRejected = (rejected, cancellationToken) => WriteTooManyRequestsAsync(rejected, limit, window);
        });
    }

    /// <summary>The token's subject; the client's address for a request without a valid token.</summary>
    internal static string CallerKey(HttpContext context) =>
        context.User.Identity?.IsAuthenticated == true && context.User.FindFirst(ApiAccess.SubjectClaim)?.Value is { } subject
            ? "sub:" + subject
            : "ip:" + (context.Connection.RemoteIpAddress?.ToString() ?? "unknown");

    private static async ValueTask WriteTooManyRequestsAsync(OnRejectedContext rejected, int limit, TimeSpan window)
    {
        var http = rejected.HttpContext;
        var retryAfter = rejected.Lease.TryGetMetadata(MetadataName.RetryAfter, out var wait) ? wait : window;
        var seconds = Math.Max(1, (int)Math.Ceiling(retryAfter.TotalSeconds));
        http.Response.Headers.RetryAfter = seconds.ToString(CultureInfo.InvariantCulture);
        var problems = http.RequestServices.GetRequiredService<IProblemDetailsService>();
        await problems.WriteAsync(new ProblemDetailsContext
        {
            HttpContext = http,
            ProblemDetails =
            {
                Status = StatusCodes.Status429TooManyRequests,
                Title = "Too many requests",
                Detail = $"At most {limit} requests per {window.TotalSeconds.ToString(CultureInfo.InvariantCulture)} s per caller; retry after {seconds} s.",
            },
        }).ConfigureAwait(false);
    }

    /// <summary>Says at start, once the settings are valid, that nothing is protected (Mode None, Development only).</summary>
    private sealed partial class AuthenticationOffWarning(IOptions<AuthenticationSettings> settings, ILogger<AuthenticationOffWarning> logger) : IHostedService
    {
        public Task StartAsync(CancellationToken cancellationToken)
        {
            if (settings.Value.Mode == EdgeAuthenticationMode.None)
            {
                LogAuthenticationOff(logger);
            }

            return Task.CompletedTask;
        }

        public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;

        [LoggerMessage(EventId = 1100, Level = LogLevel.Warning, Message = "Authentication:Mode is None: no token is validated and every caller may do everything (Development only).")]
        private static partial void LogAuthenticationOff(ILogger logger);
    }

    /// <summary>An authenticated caller with the permission's scope or role; null: any authenticated caller.</summary>
    private sealed record PermissionRequirement(Permission? Permission) : IAuthorizationRequirement;

    private sealed class PermissionHandler(EdgeAccess access) : AuthorizationHandler<PermissionRequirement>
    {
        protected override Task HandleRequirementAsync(AuthorizationHandlerContext context, PermissionRequirement requirement)
        {
            var allowed = requirement.Permission is { } permission
                ? access.MayUse(context.User, permission)
                : !access.Enforced || context.User.Identity?.IsAuthenticated == true;
            if (allowed)
            {
                context.Succeed(requirement);
            }

            return Task.CompletedTask;
        }
    }
}
