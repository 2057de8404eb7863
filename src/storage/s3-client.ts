/**
 * The S3 client every S3 store here uses (archive, objects, key store): path-style for S3-compatible endpoints, and
 * checksums only where a request needs one (several S3-compatible servers refuse the SDK's default trailers).
 */
import { ListObjectVersionsCommand, S3Client } from '@aws-sdk/client-s3';

export function s3Client(options: { region: string; endpoint?: string | undefined }): S3Client {
  return new S3Client({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint, forcePathStyle: true } : {}),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/** One version (or delete marker) of an object, as a purge or an erasure deletes them one by one. */
export interface ObjectVersion {
  Key: string;
  VersionId: string;
  IsLatest: boolean;
  DeleteMarker: boolean;
}

/** Every version and delete marker of every object under `prefix`, all pages of them. */
export async function listObjectVersions(client: S3Client, bucket: string, prefix: string): Promise<ObjectVersion[]> {
  const found: ObjectVersion[] = [];
  let keyMarker: string | undefined;
  let versionMarker: string | undefined;
  for (;;) {
    const page = await client.send(
      new ListObjectVersionsCommand({
        Bucket: bucket,
        Prefix: prefix,
        ...(keyMarker ? { KeyMarker: keyMarker } : {}),
        ...(versionMarker ? { VersionIdMarker: versionMarker } : {}),
      }),
    );
    const listed = [
      ...(page.Versions ?? []).map((v) => ({ ...v, DeleteMarker: false })),
      ...(page.DeleteMarkers ?? []).map((v) => ({ ...v, DeleteMarker: true })),
    ];
    for (const v of listed)
      if (v.Key && v.VersionId)
        found.push({ Key: v.Key, VersionId: v.VersionId, IsLatest: v.IsLatest === true, DeleteMarker: v.DeleteMarker });
    if (!page.IsTruncated) return found;
    keyMarker = page.NextKeyMarker;
    versionMarker = page.NextVersionIdMarker;
  }
}
