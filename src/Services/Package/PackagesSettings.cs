using System.ComponentModel.DataAnnotations;
using DroneDelivery.ServiceClients.Cosmos;

namespace DroneDelivery.Package;

/// <summary>Where packages are kept (section <c>Packages</c>).</summary>
public sealed class PackagesSettings
{
    /// <summary>The packages container, partitioned by <c>/id</c> (the package id). Default <c>packages</c>.</summary>
    [Required]
    [RegularExpression(CosmosNames.IdPattern, ErrorMessage = CosmosNames.IdRule)]
    public string ContainerId { get; set; } = "packages";
}
