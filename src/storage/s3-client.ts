/**
 * The S3 client every S3 store here uses (archive, objects, key store): path-style for S3-compatible endpoints, and
 * checksums only where a request needs one (several S3-compatible servers refuse the SDK's default trailers).
 */
import { S3Client } from '@aws-sdk/client-s3';

export function s3Client(options: { region: string; endpoint?: string | undefined }): S3Client {
  return new S3Client({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint, forcePathStyle: true } : {}),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}
