using System.Security.Claims;
using DroneDelivery.Security.Tokens;
using Microsoft.Extensions.Options;

namespace DroneDelivery.Security.PublicApis;

/// <summary>
/// What an operation needs: a delegated scope (the caller then acts only for its own owner id) or an
/// application role (the caller acts for every owner). Its scope names the authorization policy.
/// </summary>
public sealed record Permission(string Scope, string Role, string Action)
{
    public static readonly Permission ReadInvoices = new(ApiAccess.Scopes.InvoicesRead, ApiAccess.Roles.InvoicesReadAll, "read the invoices");

    public static readonly Permission ReadDeliveries = new(ApiAccess.Scopes.DeliveriesRead, ApiAccess.Roles.DeliveriesReadAll, "read the deliveries");

    public static readonly Permission WriteDeliveries = new(ApiAccess.Scopes.DeliveriesWrite, ApiAccess.Roles.DeliveriesWriteAll, "request, cancel or reschedule the deliveries");

    public static IReadOnlyList<Permission> All { get; } = [ReadInvoices, ReadDeliveries, WriteDeliveries];

    /// <summary>The authorization policy: an authenticated caller with the scope or the role.</summary>
    public string PolicyName => Scope;
}

/// <summary>Reads a validated token's claims: who the caller is, which owner it acts as, what it may do.</summary>
public sealed class EdgeAccess(IOptions<AuthenticationSettings> settings)
{
    private readonly string _ownerClaim = settings.Value.OwnerClaim;

    /// <summary>False only with <see cref="EdgeAuthenticationMode.None"/> (Development): every caller may do everything.</summary>
    public bool Enforced { get; } = settings.Value.Mode != EdgeAuthenticationMode.None;

    /// <summary>The owner id the caller acts as, or null when its token names none.</summary>
    public string? OwnerOf(ClaimsPrincipal user) => user.FindFirst(_ownerClaim)?.Value;

    /// <summary>The token carries the scope (<c>scp</c> or <c>scope</c>, space-separated).</summary>
    public static bool HasScope(ClaimsPrincipal user, string scope) =>
        user.Claims.Any(claim => claim.Type is ApiAccess.ScopeClaim or ApiAccess.ScopeClaimRfc9068
            && claim.Value.Split(' ', StringSplitOptions.RemoveEmptyEntries).Contains(scope, StringComparer.Ordinal));

    /// <summary>The token carries the app role.</summary>
    public static bool HasRole(ClaimsPrincipal user, string role) =>
        user.Claims.Any(claim => claim.Type == ApiAccess.RolesClaim && string.Equals(claim.Value, role, StringComparison.Ordinal));

    /// <summary>The caller may use the operation at all: its scope or its role (the policy's check).</summary>
    public bool MayUse(ClaimsPrincipal user, Permission permission) =>
        !Enforced || (user.Identity?.IsAuthenticated == true && (HasRole(user, permission.Role) || HasScope(user, permission.Scope)));

    /// <summary>The caller may use the operation for <paramref name="ownerId"/>: the role, or the scope and that owner id.</summary>
    public bool MayActFor(ClaimsPrincipal user, Permission permission, string ownerId) =>
        !Enforced || (MayUse(user, permission)
            && (HasRole(user, permission.Role) || string.Equals(OwnerOf(user), ownerId, StringComparison.Ordinal)));

    /// <summary>The caller acts for every owner (the role), so no owner needs to be looked up.</summary>
    public bool ActsForEveryOwner(ClaimsPrincipal user, Permission permission) =>
        !Enforced || HasRole(user, permission.Role);
}
